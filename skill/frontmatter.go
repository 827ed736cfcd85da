package skill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/skillport/skillport/internal/jsonobj"
)

// Frontmatter is a SKILL.md frontmatter as an ordered JSON object.
//
// It marshals to JSON with the keys in the order they were written, and
// values as the YAML 1.2 core schema resolves them: numbers stay numbers,
// booleans booleans, nested mappings objects. Values returned by [Frontmatter.Get]
// are string, json.Number, bool, nil, []any or map[string]any.
//
// The zero Frontmatter is an empty object. A Frontmatter is immutable.
type Frontmatter struct {
	raw  []byte // compact JSON object, keys in source order
	keys []string
	// values[i] is the value of keys[i]. A slice, not a map: a frontmatter
	// has a handful of fields, and a catalog keeps one per skill for as
	// long as it serves them (a map costs hundreds of bytes more each).
	values []any
	pos    map[posKey]position
	// lean is set by [Frontmatter.Lean]: keys and values are not kept but
	// decoded from raw when asked, name and description are.
	lean              bool
	name, description string
}

type position struct{ line, column int }

// posKey locates a top-level field's value, or with member set the key
// of a member of a top-level mapping field.
type posKey struct {
	field, member string
	isMember      bool
}

// Keys returns the top-level field names in source order.
func (f Frontmatter) Keys() []string {
	keys, _ := f.fields()
	return slices.Clone(keys)
}

// Len returns the number of top-level fields.
func (f Frontmatter) Len() int {
	keys, _ := f.fields()
	return len(keys)
}

// Get returns a top-level field.
func (f Frontmatter) Get(key string) (any, bool) {
	switch {
	case f.lean && key == "name" && f.name != "":
		return f.name, true
	case f.lean && key == "description" && f.description != "":
		return f.description, true
	}
	if f.lean { // decode only the field asked for
		raw, ok := jsonobj.Lookup(f.raw, key)
		if !ok {
			return nil, false
		}
		v, err := jsonobj.Decode(raw, maxDepth+1)
		return v, err == nil
	}
	if i := slices.Index(f.keys, key); i >= 0 {
		return f.values[i], true
	}
	return nil, false
}

// fields returns the keys and values, decoded from the JSON when f is lean.
func (f Frontmatter) fields() ([]string, []any) {
	if !f.lean {
		return f.keys, f.values
	}
	keys, values, err := jsonobj.Object(f.raw, maxDepth+2)
	if err != nil { // raw is what this package encoded: it always decodes
		return nil, nil
	}
	return keys, inOrder(keys, values)
}

// Lean returns f keeping only its JSON, name and description: every other
// field is decoded from the JSON each time it is read. A server holds one
// frontmatter per skill for as long as it serves the skill and reads
// little of it but the name and description; decoded, each costs a few
// dozen small objects (keys, boxed values, nested maps) that the runtime
// keeps spread over pages among the garbage of the build that made them:
// on the 21,066-skill real-world tree, 19 MB of live heap and 24 MB more
// of pages held by them.
func (f Frontmatter) Lean() Frontmatter {
	if f.lean {
		return f
	}
	return LeanPack([]Frontmatter{f})[0]
}

// LeanPack returns lean copies (see [Frontmatter.Lean]) of many
// frontmatters, whose JSON shares one allocation and whose names and
// descriptions share another, where each would take three of its own.
func LeanPack(fms []Frontmatter) []Frontmatter {
	nraw, ntext := 0, 0
	for _, f := range fms {
		nraw += len(f.raw)
		ntext += len(f.Name()) + len(f.Description())
	}
	raw := make([]byte, 0, nraw)
	var text strings.Builder
	text.Grow(ntext)
	type span struct{ raw, name, desc int }
	ends := make([]span, len(fms))
	for i, f := range fms {
		raw = append(raw, f.raw...)
		text.WriteString(f.Name())
		n := text.Len()
		text.WriteString(f.Description())
		ends[i] = span{len(raw), n, text.Len()}
	}
	all := text.String()
	out := make([]Frontmatter, len(fms))
	var r, t int
	for i, f := range fms {
		e := ends[i]
		out[i] = Frontmatter{lean: true, name: all[t:e.name], description: all[e.name:e.desc]}
		if f.raw != nil {
			out[i].raw = raw[r:e.raw:e.raw]
		}
		r, t = e.raw, e.desc
	}
	return out
}

// String returns a top-level field if it is a string.
func (f Frontmatter) String(key string) (string, bool) {
	v, _ := f.Get(key)
	s, ok := v.(string)
	return s, ok
}

// Name returns the name field, or "" if it is absent or not a string.
func (f Frontmatter) Name() string { s, _ := f.String("name"); return s }

// Description returns the description field, or "" if it is absent or not a string.
func (f Frontmatter) Description() string { s, _ := f.String("description"); return s }

// Position returns the 1-based line and column in SKILL.md of a top-level
// field's value, or zeros when unknown (a Frontmatter decoded from JSON).
func (f Frontmatter) Position(key string) (line, column int) {
	p := f.pos[posKey{field: key}]
	return p.line, p.column
}

// WithoutPositions returns f without the source positions of its fields,
// which only validation reads: a catalog that keeps thousands of
// frontmatters for as long as it serves them saves the memory.
func (f Frontmatter) WithoutPositions() Frontmatter {
	f.pos = nil
	return f
}

// memberPosition locates the key of member k of a top-level mapping field,
// falling back to the field's value.
func (f Frontmatter) memberPosition(field, k string) (line, column int) {
	if p, ok := f.pos[posKey{field: field, member: k, isMember: true}]; ok {
		return p.line, p.column
	}
	return f.Position(field)
}

// MarshalJSON returns the frontmatter as a compact JSON object, keys in source order.
func (f Frontmatter) MarshalJSON() ([]byte, error) {
	if f.raw == nil {
		return []byte("{}"), nil
	}
	return f.raw, nil
}

// JSON returns the same bytes as MarshalJSON without copying; callers must not modify them.
func (f Frontmatter) JSON() []byte {
	b, _ := f.MarshalJSON()
	return b
}

// UnmarshalJSON decodes a JSON object, as a host receives it in a skill entry.
// Key order is kept; duplicate keys are an error, because a field-by-field
// comparison with an ambiguous object means nothing.
func (f *Frontmatter) UnmarshalJSON(data []byte) error {
	// Containers directly inside a field value are depth 0, as in YAML;
	// the object itself is depth 0 for jsonobj, so one more level.
	keys, values, err := jsonobj.Object(data, maxDepth+2)
	if errors.Is(err, jsonobj.ErrTooDeep) {
		return fmt.Errorf("frontmatter: %v: %w", err, ErrTooDeep)
	}
	if err != nil {
		return fmt.Errorf("frontmatter: %w", err)
	}
	out := Frontmatter{values: inOrder(keys, values), keys: keys}
	var buf bytes.Buffer
	buf.Grow(len(data))
	if err := json.Compact(&buf, data); err != nil {
		return fmt.Errorf("frontmatter: %w", err)
	}
	out.raw = buf.Bytes()
	*f = out
	return nil
}

// FrontmatterFromMap builds a Frontmatter from Go values (string, bool, nil,
// json.Number, integers, floats, []any, map[string]any), with top-level keys
// in the given order. It is meant for generated skills and tests.
func FrontmatterFromMap(keys []string, values map[string]any) (Frontmatter, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		v, ok := values[k]
		if !ok {
			return Frontmatter{}, fmt.Errorf("frontmatter: key %q has no value", k)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := json.Marshal(v)
		if err != nil {
			return Frontmatter{}, fmt.Errorf("frontmatter: key %q: %w", k, err)
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	var f Frontmatter
	if err := f.UnmarshalJSON(buf.Bytes()); err != nil {
		return Frontmatter{}, err
	}
	return f, nil
}

// Diff compares two frontmatters field by field and returns the names of the
// top-level fields that differ (present in one only, or with different
// values), sorted. Numbers compare by value, so 1, 1.0 and 1e0 are equal.
// An empty result means the two are equal.
func (f Frontmatter) Diff(other Frontmatter) []string {
	var diff []string
	keys, values := f.fields()
	okeys, ovalues := other.fields()
	for i, k := range keys {
		j := slices.Index(okeys, k)
		if j < 0 || !equalJSON(values[i], ovalues[j]) {
			diff = append(diff, k)
		}
	}
	for _, k := range okeys {
		if !slices.Contains(keys, k) {
			diff = append(diff, k)
		}
	}
	slices.Sort(diff)
	return slices.Compact(diff)
}

// Equal reports whether two frontmatters have the same fields and values.
func (f Frontmatter) Equal(other Frontmatter) bool { return len(f.Diff(other)) == 0 }

func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == bn {
			return true
		}
		ra, ok1 := new(big.Rat).SetString(string(a))
		rb, ok2 := new(big.Rat).SetString(string(bn))
		return ok1 && ok2 && ra.Cmp(rb) == 0
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], bs[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !equalJSON(av, bv) {
				return false
			}
		}
		return true
	}
	return false
}

// converter turns a YAML node tree into JSON, refusing what JSON or safety forbid.
type converter struct {
	lineOffset int
	// rewritten is set when surrogate escapes were joined before parsing;
	// only double-quoted scalars may then hold a rewritten escape.
	rewritten bool
	buf       bytes.Buffer
}

func (c *converter) fail(n *yaml.Node, rule string, err error, format string, args ...any) error {
	return &ParseError{Line: n.Line + c.lineOffset, Column: n.Column, Offset: -1, Rule: rule, Err: err,
		Msg: "frontmatter: " + fmt.Sprintf(format, args...)}
}

// frontmatter converts m, the document's root mapping. Its fields go
// straight into the Frontmatter's keys, values and positions, which also
// find duplicate keys: no map of the fields is made to be taken apart.
func (c *converter) frontmatter(m *yaml.Node) (Frontmatter, error) {
	if err := c.check(m, 0); err != nil {
		return Frontmatter{}, err
	}
	n := len(m.Content) / 2
	f := Frontmatter{pos: make(map[posKey]position, n), keys: make([]string, 0, n), values: make([]any, 0, n)}
	if _, err := c.mapping(m, 0, &f); err != nil {
		return Frontmatter{}, err
	}
	f.raw = bytes.Clone(c.buf.Bytes())
	return f, nil
}

// addField records a top-level field, its value and its position, and
// the positions of the members of a mapping value, which findings about
// them point at.
func (f *Frontmatter) addField(k, v *yaml.Node, value any, lineOffset int) {
	f.keys = append(f.keys, k.Value)
	f.values = append(f.values, value)
	f.pos[posKey{field: k.Value}] = position{v.Line + lineOffset, v.Column}
	if v.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(v.Content); j += 2 {
			mk := v.Content[j]
			f.pos[posKey{field: k.Value, member: mk.Value, isMember: true}] = position{mk.Line + lineOffset, mk.Column}
		}
	}
}

// inOrder returns the values of m in the order of keys.
func inOrder(keys []string, m map[string]any) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// value writes n as JSON to c.buf and returns it as the Go value
// encoding/json would decode from that JSON with UseNumber.
func (c *converter) value(n *yaml.Node, depth int) (any, error) {
	if err := c.check(n, depth); err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.MappingNode:
		return c.mapping(n, depth, nil)
	case yaml.SequenceNode:
		c.buf.WriteByte('[')
		out := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			if i > 0 {
				c.buf.WriteByte(',')
			}
			ev, err := c.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
		c.buf.WriteByte(']')
		return out, nil
	case yaml.ScalarNode:
		return c.scalar(n)
	}
	return nil, c.fail(n, RuleFrontmatterSyntax, ErrSyntax, "unexpected YAML node")
}

// check refuses what no node may be: nested too deeply, an anchor or
// alias, a tag.
func (c *converter) check(n *yaml.Node, depth int) error {
	if depth > maxDepth {
		return c.fail(n, RuleFrontmatterSyntax, ErrTooDeep, "nested more than %d levels deep", maxDepth)
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return c.fail(n, RuleFrontmatterSyntax, ErrAlias, "anchors and aliases (&, *) are not allowed; write the value out")
	}
	if n.Style&yaml.TaggedStyle != 0 {
		return c.fail(n, RuleFrontmatterSyntax, ErrTag, "the tag %s is not allowed; remove it", n.Tag)
	}
	return nil
}

// mapping writes the mapping n as a JSON object to c.buf and returns it as
// a map, or, for the root (top set), adds its fields to top and returns nil.
func (c *converter) mapping(n *yaml.Node, depth int, top *Frontmatter) (map[string]any, error) {
	c.buf.WriteByte('{')
	var out map[string]any
	if top == nil {
		out = make(map[string]any, len(n.Content)/2)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode || k.Anchor != "" {
			return nil, c.fail(k, RuleFrontmatterSyntax, ErrAlias, "anchors and aliases (&, *) are not allowed; write the value out")
		}
		if k.Style&yaml.TaggedStyle != 0 {
			return nil, c.fail(k, RuleFrontmatterSyntax, ErrTag, "the tag %s is not allowed; remove it", k.Tag)
		}
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			return nil, c.fail(k, RuleFrontmatterSyntax, ErrKeyType, "keys must be plain strings; merge keys (<<) and complex keys are not allowed")
		}
		if kind := resolveScalar(k); kind != scalarString {
			return nil, c.fail(k, RuleFrontmatterSyntax, ErrKeyType, "key %q is a YAML %s; quote it to make it a string", k.Value, kind)
		}
		dup := false
		if top != nil {
			_, dup = top.pos[posKey{field: k.Value}]
		} else {
			_, dup = out[k.Value]
		}
		if dup {
			return nil, c.fail(k, RuleFrontmatterDuplicate, ErrDuplicateKey, "duplicate key %q; each field may appear once", k.Value)
		}
		if i > 0 {
			c.buf.WriteByte(',')
		}
		writeJSONString(&c.buf, k.Value)
		c.buf.WriteByte(':')
		ev, err := c.value(v, depth+1)
		if err != nil {
			return nil, err
		}
		if top != nil {
			top.addField(k, v, ev, c.lineOffset)
		} else {
			out[k.Value] = ev
		}
	}
	c.buf.WriteByte('}')
	return out, nil
}

type scalarKind string

const (
	scalarString scalarKind = "string"
	scalarNull   scalarKind = "null"
	scalarBool   scalarKind = "boolean"
	scalarInt    scalarKind = "integer"
	scalarFloat  scalarKind = "float"
)

// YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1023-core-schema).
var (
	coreNull     = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
	coreBool     = regexp.MustCompile(`^(?:true|True|TRUE|false|False|FALSE)$`)
	coreInt      = regexp.MustCompile(`^[-+]?[0-9]+$`)
	coreOct      = regexp.MustCompile(`^0o[0-7]+$`)
	coreHex      = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	coreFloat    = regexp.MustCompile(`^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$`)
	coreInfNaN   = regexp.MustCompile(`^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$`)
	jsonNumberRE = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$`)
)

// resolveScalar applies the core schema to plain scalars; any quoted or block
// scalar is a string.
func resolveScalar(n *yaml.Node) scalarKind {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return scalarString
	}
	v := n.Value
	if v != "" && !strings.ContainsRune("~nNtTfF0123456789+-.", rune(v[0])) {
		return scalarString // no core-schema pattern starts with anything else
	}
	switch {
	case coreNull.MatchString(v):
		return scalarNull
	case coreBool.MatchString(v):
		return scalarBool
	case coreInt.MatchString(v), coreOct.MatchString(v), coreHex.MatchString(v):
		return scalarInt
	case coreFloat.MatchString(v), coreInfNaN.MatchString(v):
		return scalarFloat
	}
	return scalarString
}

func (c *converter) scalar(n *yaml.Node) (any, error) {
	v := n.Value
	if c.rewritten && n.Style&yaml.DoubleQuotedStyle == 0 && strings.Contains(v, `\U`) {
		return nil, c.fail(n, RuleFrontmatterSyntax, ErrSyntax, "invalid Unicode escape; write the character itself")
	}
	switch resolveScalar(n) {
	case scalarNull:
		c.buf.WriteString("null")
		return nil, nil
	case scalarBool:
		b := strings.ToLower(v) == "true"
		c.buf.WriteString(strconv.FormatBool(b))
		return b, nil
	case scalarInt:
		s := intJSON(v)
		c.buf.WriteString(s)
		return json.Number(s), nil
	case scalarFloat:
		if coreInfNaN.MatchString(v) {
			return nil, c.fail(n, RuleFrontmatterSyntax, ErrUnrepresentable, "%s has no JSON representation; quote it to make it a string", v)
		}
		s, err := floatJSON(v)
		if err != nil {
			return nil, c.fail(n, RuleFrontmatterSyntax, ErrUnrepresentable, "%s: %v; quote it to make it a string", v, err)
		}
		c.buf.WriteString(s)
		return json.Number(s), nil
	}
	writeJSONString(&c.buf, v)
	return v, nil
}

// intJSON renders a core-schema integer as a JSON number of any magnitude.
func intJSON(v string) string {
	neg := false
	switch {
	case strings.HasPrefix(v, "0o"):
		z, _ := new(big.Int).SetString(v[2:], 8)
		return z.String()
	case strings.HasPrefix(v, "0x"):
		z, _ := new(big.Int).SetString(v[2:], 16)
		return z.String()
	case strings.HasPrefix(v, "-"):
		neg, v = true, v[1:]
	case strings.HasPrefix(v, "+"):
		v = v[1:]
	}
	v = strings.TrimLeft(v, "0")
	if v == "" {
		return "0"
	}
	if neg {
		return "-" + v
	}
	return v
}

// floatJSON renders a core-schema float as a JSON number: as written when
// that is already valid JSON, otherwise in Go's shortest form.
func floatJSON(v string) (string, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) {
		// JSON readers such as JavaScript's would turn it into Infinity.
		return "", errors.New("out of the range of a 64-bit float")
	}
	if jsonNumberRE.MatchString(v) {
		return v, nil
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// writeJSONString writes s as encoding/json writes a string. Most
// frontmatter values need no escaping and are copied between quotes
// without encoding/json's reflection and allocation (a catalog converts
// tens of thousands of them).
func writeJSONString(buf *bytes.Buffer, s string) {
	if plainJSON(s) {
		buf.WriteByte('"')
		buf.WriteString(s)
		buf.WriteByte('"')
		return
	}
	b, _ := json.Marshal(s)
	buf.Write(b)
}

// plainJSON reports whether encoding/json writes s unchanged between
// quotes: valid UTF-8 with no control character, quote, backslash, no
// character it escapes for HTML (<, >, &), and no line or paragraph
// separator (U+2028, U+2029; any character whose encoding starts with
// their first byte, 0xE2, takes the slow path).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&', c == 0xE2:
			return false
		}
	}
	return utf8.ValidString(s)
}
