package skillclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/wire"
)

// DecodeEntry decodes one skill entry as a server sent it (an element of
// skills/list's skills, or skills/get's skill) and checks it with
// [ParseEntry], returning the entry and what its URI names. Decoding is
// stricter than encoding/json: keys match case-sensitively, duplicate keys
// are refused, sizes must be non-negative integers, so that nothing about
// the entry's identity depends on decoder leniency. A bad entry is an
// [*EntryError] naming it; it says nothing about the entries around it.
func DecodeEntry(raw []byte) (*wire.Skill, *skilluri.Skill, error) {
	bad := func(uri, format string, args ...any) error {
		return &EntryError{URI: uri, Msg: fmt.Sprintf(format, args...)}
	}
	fields, err := jsonobj.Fields(raw)
	if err != nil {
		return nil, nil, bad("", "entry is not a JSON object: %v", err)
	}
	// Fields checked the whole entry; its members are split without
	// checking their bytes again.
	uriRaw, ok := member(fields, "uri")
	uri, err := jsonobj.MemberString(uriRaw)
	if err != nil || !ok {
		return nil, nil, bad("", "uri is missing or not a string")
	}
	fmRaw, ok := member(fields, "frontmatter")
	if !ok {
		return nil, nil, bad(uri, "frontmatter is missing")
	}
	var fm skill.Frontmatter
	if err := fm.UnmarshalJSON(fmRaw); err != nil {
		return nil, nil, bad(uri, "%v", err)
	}
	resRaw, ok := member(fields, "resources")
	if !ok {
		return nil, nil, bad(uri, `resources is missing; an entry without resources must not be loaded (it must be an array or "dynamic")`)
	}
	res, err := decodeResources(resRaw)
	if err != nil {
		return nil, nil, bad(uri, "resources: %v", err)
	}
	s := &wire.Skill{URI: uri, Frontmatter: fm, Resources: res}
	if meta, ok := member(fields, "_meta"); ok {
		s.Meta = meta
	}
	sk, err := ParseEntry(s)
	if err != nil {
		return nil, nil, err
	}
	return s, sk, nil
}

// decodeResources decodes "dynamic" or an array of {uri, digest, size}.
func decodeResources(raw []byte) (*wire.Resources, error) {
	raw = bytes.TrimSpace(raw)
	if string(raw) == `"dynamic"` {
		return &wire.Resources{Dynamic: true}, nil
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, errors.New(`must be an array or the string "dynamic"`)
	}
	// raw is a member of the checked entry (DecodeEntry).
	items, err := jsonobj.MemberElements(raw)
	if err != nil {
		return nil, err
	}
	files := make([]wire.SkillResource, 0, len(items))
	f := make([]jsonobj.Field, 0, 4) // reused for every item
	for i, it := range items {
		f, err = jsonobj.AppendMemberFields(f[:0], it)
		if err != nil {
			return nil, fmt.Errorf("item %d: not a JSON object: %v", i, err)
		}
		var r wire.SkillResource
		v, ok := member(f, "uri")
		if r.URI, err = jsonobj.MemberString(v); err != nil || !ok {
			return nil, fmt.Errorf("item %d: uri is missing or not a string", i)
		}
		v, ok = member(f, "digest")
		if r.Digest, err = jsonobj.MemberString(v); err != nil || !ok {
			return nil, fmt.Errorf("item %d (%q): digest is missing or not a string", i, r.URI)
		}
		size, present := member(f, "size")
		if !present {
			// A deviation some servers have; ParseEntry accepts it and
			// reads stay bounded (see SizeUnknown).
			r.Size = SizeUnknown
			files = append(files, r)
			continue
		}
		if len(size) == 0 {
			return nil, fmt.Errorf("item %d (%q): size is missing", i, r.URI)
		}
		n, err := parseSize(size)
		if err != nil {
			return nil, fmt.Errorf("item %d (%q): size %s %v", i, r.URI, clip(string(size)), err)
		}
		r.Size = n
		files = append(files, r)
	}
	return &wire.Resources{Files: files}, nil
}

var (
	errSizeSyntax = errors.New("is not a non-negative integer")
	errSizeRange  = errors.New("is out of range")
)

// parseSize reads a size as JSON writes a non-negative integer: digits,
// no leading zero, no sign, fraction or exponent, at most 2^63-1. It reads
// the bytes of the entry where they are, without a string copy each.
func parseSize(b []byte) (int64, error) {
	if len(b) > 1 && b[0] == '0' {
		return 0, errSizeSyntax
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errSizeSyntax
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, errSizeRange
		}
		n = n*10 + d
	}
	return n, nil
}

// member returns the value of the member named key: a scan, which for the
// handful of members of an entry or file beats building a map.
func member(fs []jsonobj.Field, key string) (json.RawMessage, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}
