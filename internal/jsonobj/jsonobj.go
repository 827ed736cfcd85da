// Package jsonobj splits untrusted JSON objects into their members,
// strictly: the input must be one valid JSON object, keys keep their order,
// and a key that appears twice is an error rather than a silent overwrite
// (two readers of the same bytes must not disagree on what an entry says).
//
// It exists because encoding/json's Decoder.Token, the standard way to see
// duplicate keys, allocates for every token and dominated the host's
// decoding of skills/list pages.
package jsonobj

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrNotObject is returned for input that is valid JSON but not an object.
var ErrNotObject = errors.New("not a JSON object")

// Field is one member of an object: its unescaped key and its value as
// written (a sub-slice of the input, not a copy).
type Field struct {
	Key   string
	Value json.RawMessage
}

// DuplicateKeyError reports a key that appears more than once.
type DuplicateKeyError struct{ Key string }

func (e *DuplicateKeyError) Error() string { return fmt.Sprintf("duplicate key %q", e.Key) }

// Fields returns the members of the JSON object raw, in order. Leading and
// trailing white space is allowed; anything else around the object, invalid
// JSON (including invalid UTF-8 in strings) and duplicate keys are errors.
func Fields(raw []byte) ([]Field, error) {
	if !json.Valid(raw) {
		// Let encoding/json say where and why.
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		return nil, errors.New("invalid JSON")
	}
	// Outside strings valid JSON is ASCII, so this checks the strings:
	// encoding/json would turn invalid bytes into U+FFFD, and two keys that
	// differ only there would look like one.
	if !utf8.Valid(raw) {
		return nil, errors.New("invalid UTF-8 in a string")
	}
	i := skipSpace(raw, 0)
	if raw[i] != '{' {
		return nil, ErrNotObject
	}
	i = skipSpace(raw, i+1)
	var out []Field
	if raw[i] == '}' {
		return out, nil
	}
	for {
		// raw is valid JSON, so here is a key string, ':' and a value.
		kend := stringEnd(raw, i)
		key, err := unquote(raw[i:kend])
		if err != nil {
			return nil, err
		}
		i = skipSpace(raw, kend)
		i = skipSpace(raw, i+1) // ':'
		vend := valueEnd(raw, i)
		for _, f := range out {
			if f.Key == key {
				return nil, &DuplicateKeyError{Key: key}
			}
		}
		out = append(out, Field{Key: key, Value: raw[i:vend:vend]})
		i = skipSpace(raw, vend)
		if raw[i] == '}' {
			return out, nil
		}
		i = skipSpace(raw, i+1) // ','
	}
}

// Map is Fields as a map, for callers that look members up by key.
func Map(raw []byte) (map[string]json.RawMessage, error) {
	fs, err := Fields(raw)
	if err != nil {
		return nil, err
	}
	m := make(map[string]json.RawMessage, len(fs))
	for _, f := range fs {
		m[f.Key] = f.Value
	}
	return m, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the value starting at b[i].
func valueEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i = stringEnd(b, i)
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // end of the enclosing object: a scalar just ended
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}

// unquote decodes a JSON string literal; keys without escapes, the usual
// case, are converted without a decoder.
func unquote(lit []byte) (string, error) {
	inner := lit[1 : len(lit)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			err := json.Unmarshal(lit, &s)
			return s, err
		}
	}
	return string(inner), nil
}
