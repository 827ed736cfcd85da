// Package jsonc reads configuration files as people write them: JSON with
// comments and trailing commas (JSONC, as VS Code's mcp.json and the
// README's snippets are), reporting every error at file:line:column.
//
// Parsing is github.com/tailscale/hujson's: Standardize turns JSONC into
// JSON of the same length, comments and trailing commas blanked out, so
// that byte offsets reported by encoding/json still point into the file as
// the user wrote it.
package jsonc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/tailscale/hujson"
)

// Error is a problem at a position of a configuration file.
type Error struct {
	File   string // as given; "" for bytes without a file
	Line   int    // 1-based; 0 when the position is unknown
	Column int    // 1-based, in bytes
	Msg    string
	Err    error // the decoder's error, if any
}

func (e *Error) Error() string {
	where := e.File
	if e.Line > 0 {
		if where != "" {
			where += ":"
		}
		where += fmt.Sprintf("%d:%d", e.Line, e.Column)
	}
	if where == "" {
		return e.Msg
	}
	return where + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Standardize returns data as standard JSON with the same byte offsets. A
// syntax error is an [*Error] at its line and column.
func Standardize(file string, data []byte) ([]byte, error) {
	out, err := hujson.Standardize(bytes.Clone(data))
	if err != nil {
		e := &Error{File: file, Msg: err.Error(), Err: err}
		if m := hujsonPos.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Column, _ = strconv.Atoi(m[2])
			e.Msg = m[3]
		}
		return nil, e
	}
	return out, nil
}

var hujsonPos = regexp.MustCompile(`^hujson: line (\d+), column (\d+): (.*)$`)

// Unmarshal decodes JSONC data into v. With strict set, an object key that
// v has no field for is an error naming it; use it for files whose format
// is ours alone. Errors are [*Error]s positioned in data.
func Unmarshal(file string, data []byte, v any, strict bool) error {
	std, err := Standardize(file, data)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(std))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return positioned(file, data, err)
	}
	if _, err := dec.Token(); err == nil {
		off := dec.InputOffset()
		return At(file, data, int(off), "unexpected content after the top-level value")
	}
	return nil
}

// At returns an [*Error] at byte offset off of data.
func At(file string, data []byte, off int, format string, args ...any) *Error {
	line, col := Position(data, off)
	return &Error{File: file, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// Position converts a byte offset of data to a 1-based line and column.
func Position(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// KeyOffset is the offset of the first occurrence of key, quoted, in data,
// or -1: a position for errors about a key that encoding/json reports
// without one.
func KeyOffset(data []byte, key string) int {
	q, _ := json.Marshal(key)
	return bytes.Index(data, q)
}

// positioned turns an encoding/json error into an [*Error].
func positioned(file string, data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		e := At(file, data, int(se.Offset)-1, "%s", se.Error())
		e.Err = err
		return e
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the top level"
		}
		e := At(file, data, int(te.Offset)-1, "%s: expected %s, found a JSON %s", field, jsonType(te.Type.Kind().String()), te.Value)
		e.Err = err
		return e
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{File: file, Msg: "the file is empty or ends in the middle of a value", Err: err}
	}
	// encoding/json reports unknown fields as `json: unknown field "k"`.
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		key, _ := strconv.Unquote(m[1])
		off := KeyOffset(data, key)
		e := &Error{File: file, Msg: fmt.Sprintf("unknown field %q", key), Err: err}
		if off >= 0 {
			e.Line, e.Column = Position(data, off)
		}
		return e
	}
	return &Error{File: file, Msg: err.Error(), Err: err}
}

var unknownField = regexp.MustCompile(`^json: unknown field ("(?:[^"\\]|\\.)*")$`)

// jsonType names a Go kind as the JSON type a user would write.
func jsonType(kind string) string {
	switch kind {
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	}
	return kind
}
