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
	"bytes"
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
	if err := check(raw); err != nil {
		return nil, err
	}
	lit := trimSpace(raw)
	if lit[0] != '{' {
		return nil, ErrNotObject
	}
	return fields(lit)
}

// fields splits the valid object that starts at lit[0] == '{'.
func fields(lit []byte) ([]Field, error) {
	// Room for the members of a typical entry, file or frontmatter at once,
	// rather than growing the slice member by member.
	return appendFields(make([]Field, 0, 8), lit)
}

// appendFields appends the members of the valid object that starts at
// lit[0] == '{' to dst.
func appendFields(dst []Field, lit []byte) ([]Field, error) {
	i := skipSpace(lit, 1)
	base := len(dst)
	out := dst
	var seen map[string]bool
	if lit[i] == '}' {
		return out, nil
	}
	for {
		// lit is valid JSON, so here is a key string, ':' and a value.
		kend := stringEnd(lit, i)
		key, err := unquote(lit[i:kend])
		if err != nil {
			return nil, err
		}
		i = skipSpace(lit, kend)
		i = skipSpace(lit, i+1) // ':'
		vend := valueEnd(lit, i)
		// A scan is fastest for the few keys of real objects; a hostile one
		// with many keys must not make it quadratic.
		if seen != nil {
			if seen[key] {
				return nil, &DuplicateKeyError{Key: key}
			}
			seen[key] = true
		} else {
			for _, f := range out[base:] {
				if f.Key == key {
					return nil, &DuplicateKeyError{Key: key}
				}
			}
			if len(out)-base == 16 {
				seen = make(map[string]bool, 64)
				for _, f := range out[base:] {
					seen[f.Key] = true
				}
				seen[key] = true
			}
		}
		out = append(out, Field{Key: key, Value: lit[i:vend:vend]})
		i = skipSpace(lit, vend)
		if lit[i] == '}' {
			return out, nil
		}
		i = skipSpace(lit, i+1) // ','
	}
}

// Map is Fields as a map, for callers that look members up by key.
func Map(raw []byte) (map[string]json.RawMessage, error) {
	fs, err := Fields(raw)
	if err != nil {
		return nil, err
	}
	return toMap(fs), nil
}

func toMap(fs []Field) map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(fs))
	for _, f := range fs {
		m[f.Key] = f.Value
	}
	return m
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"'.
// It jumps from quote to quote (bytes.IndexByte, many bytes at a time)
// instead of looking at every byte: strings are most of a skill entry
// (URIs, digests, the description). In valid JSON a quote ends the string
// unless an odd run of backslashes comes right before it.
func stringEnd(b []byte, i int) int {
	start := i + 1
	for j := start; j < len(b); {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			break
		}
		q += j
		n := 0
		for k := q - 1; k >= start && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
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
	if bytes.IndexByte(inner, '\\') >= 0 {
		var s string
		err := json.Unmarshal(lit, &s)
		return s, err
	}
	// The keys of skill entries recur in every entry: a constant for each
	// saves an allocation per member (switch on string(inner) does not
	// allocate).
	switch string(inner) {
	case "uri":
		return "uri", nil
	case "digest":
		return "digest", nil
	case "size":
		return "size", nil
	case "name":
		return "name", nil
	case "description":
		return "description", nil
	case "frontmatter":
		return "frontmatter", nil
	case "resources":
		return "resources", nil
	case "metadata":
		return "metadata", nil
	case "license":
		return "license", nil
	}
	return string(inner), nil
}

// ErrTooDeep is returned by Decode for values nested deeper than its limit.
var ErrTooDeep = errors.New("nested too deeply")

// Elements returns the elements of the JSON array raw, in order, each as
// written (a sub-slice of the input).
func Elements(raw []byte) ([]json.RawMessage, error) {
	if err := check(raw); err != nil {
		return nil, err
	}
	i := skipSpace(raw, 0)
	if raw[i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	return elements(raw, i), nil
}

// elements splits the valid array starting at raw[i] == '['.
func elements(raw []byte, i int) []json.RawMessage {
	out := make([]json.RawMessage, 0, 8)
	i = skipSpace(raw, i+1)
	if raw[i] == ']' {
		return out
	}
	for {
		end := valueEnd(raw, i)
		out = append(out, raw[i:end:end])
		i = skipSpace(raw, end)
		if raw[i] == ']' {
			return out
		}
		i = skipSpace(raw, i+1) // ','
	}
}

// String decodes raw, which must be a JSON string.
func String(raw []byte) (string, error) {
	if err := check(raw); err != nil {
		return "", err
	}
	lit := trimSpace(raw)
	if lit[0] != '"' {
		return "", errors.New("not a JSON string")
	}
	return unquote(lit)
}

// Decode decodes the JSON value raw into string, json.Number, bool, nil,
// []any or map[string]any, like encoding/json with UseNumber, except that a
// duplicate key at any depth is an error, and so is nesting deeper than
// maxDepth (an object or array directly inside raw is depth 1).
func Decode(raw []byte, maxDepth int) (any, error) {
	if err := check(raw); err != nil {
		return nil, err
	}
	lit := trimSpace(raw)
	return decode(lit, 0, maxDepth)
}

// Object decodes the JSON object raw as Decode would, and also returns its
// keys in order; raw is validated once, not once per member.
func Object(raw []byte, maxDepth int) (keys []string, values map[string]any, err error) {
	if err := check(raw); err != nil {
		return nil, nil, err
	}
	lit := trimSpace(raw)
	if lit[0] != '{' {
		return nil, nil, ErrNotObject
	}
	fs, err := fields(lit)
	if err != nil {
		return nil, nil, err
	}
	keys = make([]string, len(fs))
	values = make(map[string]any, len(fs))
	for i, f := range fs {
		v, err := decode(f.Value, 1, maxDepth)
		if err != nil {
			return nil, nil, fmt.Errorf("%q: %w", f.Key, err)
		}
		keys[i], values[f.Key] = f.Key, v
	}
	return keys, values, nil
}

// decode decodes the valid value that is exactly lit.
func decode(lit []byte, depth, maxDepth int) (any, error) {
	switch lit[0] {
	case '{', '[':
		if depth >= maxDepth {
			return nil, ErrTooDeep
		}
		if lit[0] == '[' {
			els := elements(lit, 0)
			s := make([]any, len(els))
			for i, e := range els {
				v, err := decode(e, depth+1, maxDepth)
				if err != nil {
					return nil, err
				}
				s[i] = v
			}
			return s, nil
		}
		fs, err := fields(lit)
		if err != nil {
			return nil, err
		}
		m := make(map[string]any, len(fs))
		for _, f := range fs {
			v, err := decode(f.Value, depth+1, maxDepth)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", f.Key, err)
			}
			m[f.Key] = v
		}
		return m, nil
	case '"':
		return unquote(lit)
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		return nil, nil
	}
	return json.Number(lit), nil
}

// check reports whether raw is one valid JSON value in valid UTF-8.
func check(raw []byte) error {
	if !json.Valid(raw) {
		// Let encoding/json say where and why.
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		return errors.New("invalid JSON")
	}
	// Outside strings valid JSON is ASCII, so this checks the strings:
	// encoding/json would turn invalid bytes into U+FFFD, and two keys that
	// differ only there would look like one.
	if !utf8.Valid(raw) {
		return errors.New("invalid UTF-8 in a string")
	}
	return nil
}

func trimSpace(raw []byte) []byte {
	i := skipSpace(raw, 0)
	j := len(raw)
	for j > i && (raw[j-1] == ' ' || raw[j-1] == '\t' || raw[j-1] == '\n' || raw[j-1] == '\r') {
		j--
	}
	return raw[i:j]
}

// Lookup returns the value of member key of raw, as written (a sub-slice
// of raw), without checking raw again: raw must be a valid JSON object,
// such as one this package or encoding/json produced. It reads members up
// to the key and decodes nothing, for a caller that keeps objects as JSON
// and reads a field of one now and then.
func Lookup(raw []byte, key string) (json.RawMessage, bool) {
	lit := trimSpace(raw)
	if len(lit) < 2 || lit[0] != '{' {
		return nil, false
	}
	for i := skipSpace(lit, 1); i < len(lit) && lit[i] == '"'; {
		kend := stringEnd(lit, i)
		var match bool
		if k := lit[i+1 : kend-1]; bytes.IndexByte(k, '\\') < 0 {
			match = string(k) == key
		} else {
			u, err := unquote(lit[i:kend])
			match = err == nil && u == key
		}
		i = skipSpace(lit, skipSpace(lit, kend)+1) // ':'
		vend := valueEnd(lit, i)
		if match {
			return lit[i:vend:vend], true
		}
		i = skipSpace(lit, vend)
		if i >= len(lit) || lit[i] != ',' {
			break
		}
		i = skipSpace(lit, i+1)
	}
	return nil, false
}
