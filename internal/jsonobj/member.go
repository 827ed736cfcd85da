package jsonobj

import (
	"encoding/json"
	"errors"
)

// The functions below split a value that Fields, Map, Elements or one of
// them returned: such a value is a sub-slice of input already checked to be
// valid JSON in valid UTF-8, so it is not validated a second time. Decoding
// a skills/list entry this way checks its bytes once instead of once per
// level. Never give them anything else.

// MemberMap is Map for a checked member value.
func MemberMap(v json.RawMessage) (map[string]json.RawMessage, error) {
	if len(v) == 0 || v[0] != '{' {
		return nil, ErrNotObject
	}
	fs, err := fields(v)
	if err != nil {
		return nil, err
	}
	return toMap(fs), nil
}

// AppendMemberFields appends the fields of a checked member value to dst,
// as Fields returns them: a caller that splits many small objects in turn
// reuses one slice for all of them.
func AppendMemberFields(dst []Field, v json.RawMessage) ([]Field, error) {
	if len(v) == 0 || v[0] != '{' {
		return nil, ErrNotObject
	}
	return appendFields(dst, v)
}

// MemberElements is Elements for a checked member value.
func MemberElements(v json.RawMessage) ([]json.RawMessage, error) {
	if len(v) == 0 || v[0] != '[' {
		return nil, errors.New("not a JSON array")
	}
	return elements(v, 0), nil
}

// MemberString is String for a checked member value.
func MemberString(v json.RawMessage) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		return "", errors.New("not a JSON string")
	}
	return unquote(v)
}
