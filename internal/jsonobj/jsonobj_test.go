package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	cases := []struct {
		in   string
		want []Field // nil with err
		err  string
	}{
		{`{}`, []Field{}, ""},
		{` { } `, []Field{}, ""},
		{`{"a":1}`, []Field{{"a", json.RawMessage(`1`)}}, ""},
		{`{"a" : "x,}" , "b":[1,{"c":"]"}],"d":{"e":null},"f":true,"g":-1.5e3}`, []Field{
			{"a", json.RawMessage(`"x,}"`)}, {"b", json.RawMessage(`[1,{"c":"]"}]`)},
			{"d", json.RawMessage(`{"e":null}`)}, {"f", json.RawMessage(`true`)}, {"g", json.RawMessage(`-1.5e3`)},
		}, ""},
		{`{"q\"k":"v\\"}`, []Field{{`q"k`, json.RawMessage(`"v\\"`)}}, ""},
		{`{"\u0061":1,"b":2}`, []Field{{"a", json.RawMessage(`1`)}, {"b", json.RawMessage(`2`)}}, ""},
		{"{\n\t\"a\"\n:\n1\n}\n", []Field{{"a", json.RawMessage(`1`)}}, ""},
		{`{"a":1,"a":2}`, nil, `duplicate key "a"`},
		{`{"a":1,"\u0061":2}`, nil, `duplicate key "a"`},
		{`[1]`, nil, "not a JSON object"},
		{`"s"`, nil, "not a JSON object"},
		{`{"a":1} {}`, nil, "invalid"},
		{`{"a":1`, nil, "unexpected end"},
		{`{"a":01}`, nil, "invalid"},
		{"{\"a\":\"\xff\"}", nil, "invalid UTF-8"},
		{``, nil, "unexpected end"},
	}
	for _, tc := range cases {
		got, err := Fields([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.err)) {
				t.Errorf("Fields(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("Fields(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i].Key != tc.want[i].Key || !bytes.Equal(got[i].Value, tc.want[i].Value) {
				t.Errorf("Fields(%q)[%d] = %q:%s; want %q:%s", tc.in, i, got[i].Key, got[i].Value, tc.want[i].Key, tc.want[i].Value)
			}
		}
	}
	var dup *DuplicateKeyError
	if _, err := Fields([]byte(`{"x":1,"x":1}`)); !errors.As(err, &dup) || dup.Key != "x" {
		t.Errorf("duplicate: %v; want a *DuplicateKeyError for x", err)
	}
	if _, err := Fields([]byte(`5`)); !errors.Is(err, ErrNotObject) {
		t.Errorf("number: %v; want ErrNotObject", err)
	}
}

// FuzzFields checks Fields against encoding/json: whatever it accepts,
// encoding/json decodes to the same members, each value valid JSON, keys
// unique; whatever encoding/json refuses as an object, Fields refuses.
func FuzzFields(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[{"c":"}"}]}`, `{"a":1,"a":2}`, `{"\u00e9":"\\\""}`, `[]`, `{"a":}`, " {\"x\" :\t\"y\" }\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fs, err := Fields(raw)
		var m map[string]json.RawMessage
		stdErr := json.Unmarshal(raw, &m)
		if err != nil {
			var dup *DuplicateKeyError
			if stdErr == nil && m != nil && !errors.As(err, &dup) && json.Valid(raw) && bytes.Equal(bytes.ToValidUTF8(raw, nil), raw) {
				t.Fatalf("Fields refused %q (%v), which encoding/json decodes as an object", raw, err)
			}
			return
		}
		if stdErr != nil || m == nil {
			t.Fatalf("Fields accepted %q, which encoding/json refuses as an object: %v", raw, stdErr)
		}
		if len(fs) != len(m) {
			t.Fatalf("Fields found %d members in %q, encoding/json %d (a duplicate slipped through?)", len(fs), raw, len(m))
		}
		for _, f := range fs {
			v, ok := m[f.Key]
			if !ok || !bytes.Equal(v, f.Value) || !json.Valid(f.Value) {
				t.Fatalf("member %q of %q: Fields %s, encoding/json %s", f.Key, raw, f.Value, v)
			}
		}
	})
}

func BenchmarkFields(b *testing.B) {
	entry := []byte(`{"uri":"skill://acme/billing/refunds/SKILL.md","frontmatter":{"name":"refunds","description":"Process customer refunds for the billing team, within policy.","license":"Apache-2.0","metadata":{"owner":"billing"}},"resources":[{"uri":"skill://acme/billing/refunds/SKILL.md","digest":"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","size":812},{"uri":"skill://acme/billing/refunds/references/policy.md","digest":"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","size":2048}]}`)
	b.Run("jsonobj", func(b *testing.B) {
		for b.Loop() {
			if _, err := Map(entry); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("token-decoder", func(b *testing.B) {
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(entry))
			dec.Token()
			m := map[string]json.RawMessage{}
			for dec.More() {
				k, _ := dec.Token()
				var v json.RawMessage
				dec.Decode(&v)
				m[k.(string)] = v
			}
		}
	})
}

// FuzzDecode checks Decode against encoding/json with UseNumber: the same
// value whenever the input has no duplicate keys and is not too deep.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",{"b":null}],"c":true}`, `[[[]]]`, `"\u00e9"`, `-0.5e-3`, `{"a":{"a":1,"a":2}}`, `{"k":[{}, {"k":[false]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := Decode(raw, 4)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var want any
		stdErr := dec.Decode(&want)
		if !json.Valid(raw) { // trailing data, which Decoder leaves unread
			stdErr = errors.New("invalid")
		}
		if err != nil {
			var dup *DuplicateKeyError
			if stdErr == nil && !errors.As(err, &dup) && !errors.Is(err, ErrTooDeep) && utf8Valid(raw) {
				t.Fatalf("Decode refused %q (%v), which encoding/json decodes", raw, err)
			}
			return
		}
		if stdErr != nil {
			t.Fatalf("Decode accepted %q as %#v; encoding/json: %v", raw, got, stdErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v; encoding/json %#v", raw, got, want)
		}
	})
}

func utf8Valid(b []byte) bool { return bytes.Equal(bytes.ToValidUTF8(b, nil), b) }

func TestManyKeysAreNotQuadratic(t *testing.T) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range 200000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	b.WriteString(`,"k7":1}`)
	var dup *DuplicateKeyError
	if _, err := Fields(b.Bytes()); !errors.As(err, &dup) || dup.Key != "k7" {
		t.Fatalf("Fields: %v; want duplicate k7", err)
	}
}

func TestObject(t *testing.T) {
	keys, values, err := Object([]byte(`{"b":[1],"a":{"c":"x"}}`), 3)
	if err != nil || !reflect.DeepEqual(keys, []string{"b", "a"}) ||
		!reflect.DeepEqual(values, map[string]any{"b": []any{json.Number("1")}, "a": map[string]any{"c": "x"}}) {
		t.Fatalf("Object = %v, %v, %v", keys, values, err)
	}
	if _, _, err := Object([]byte(`{"a":[[1]]}`), 2); !errors.Is(err, ErrTooDeep) {
		t.Errorf("depth 3 under a limit of 2: %v; want ErrTooDeep", err)
	}
	if _, _, err := Object([]byte(`{"a":{"x":1,"x":2}}`), 5); err == nil || !strings.Contains(err.Error(), `"a": duplicate key "x"`) {
		t.Errorf("nested duplicate: %v", err)
	}
	if _, _, err := Object([]byte(`[]`), 5); !errors.Is(err, ErrNotObject) {
		t.Errorf("array: %v; want ErrNotObject", err)
	}
}

// TestMemberViews: the member views agree with the checking functions on
// every member of a checked object.
func TestMemberViews(t *testing.T) {
	raw := []byte(`{"s":"a\"b\u00e9","a":[1,{"x":"y"},"z"],"o":{"k":"v","n":null},"n":1}`)
	m, err := Map(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := MemberString(m["s"]); err != nil || got != "a\"bé" {
		t.Errorf("MemberString = %q, %v", got, err)
	}
	if els, err := MemberElements(m["a"]); err != nil || len(els) != 3 || string(els[1]) != `{"x":"y"}` {
		t.Errorf("MemberElements = %q, %v", els, err)
	}
	if o, err := MemberMap(m["o"]); err != nil || string(o["k"]) != `"v"` || string(o["n"]) != "null" {
		t.Errorf("MemberMap = %q, %v", o, err)
	}
	dup, _ := Map([]byte(`{"o":{"k":1,"k":2}}`))
	var de *DuplicateKeyError
	if _, err := MemberMap(dup["o"]); !errors.As(err, &de) {
		t.Errorf("MemberMap of a duplicate key: %v", err)
	}
	for _, v := range []string{"", "1", `"s"`, "[]"} {
		if _, err := MemberMap(json.RawMessage(v)); err == nil && v != "" {
			t.Errorf("MemberMap(%q) accepted a non-object", v)
		}
	}
	if _, err := MemberString(m["n"]); err == nil {
		t.Error("MemberString accepted a number")
	}
	if _, err := MemberElements(m["o"]); err == nil {
		t.Error("MemberElements accepted an object")
	}
}

// TestAppendMemberFields: a slice reused from one object to the next
// holds each object's members only, and duplicates are found within an
// object, not across objects (also past the point where a map takes over).
func TestAppendMemberFields(t *testing.T) {
	var many strings.Builder
	many.WriteString("{")
	for i := range 20 {
		fmt.Fprintf(&many, `"k%d":%d,`, i, i)
	}
	many.WriteString(`"a":0}`)
	raw := []byte(`[{"a":1,"b":2},{"a":3},` + many.String() + `,{"b":1,"b":2}]`)
	if err := check(raw); err != nil {
		t.Fatal(err)
	}
	els, _ := MemberElements(raw)
	buf := make([]Field, 0, 2)
	for i, want := range []int{2, 1, 21} {
		fs, err := AppendMemberFields(buf[:0], els[i])
		if err != nil || len(fs) != want {
			t.Fatalf("object %d: %d fields, %v; want %d", i, len(fs), err, want)
		}
		buf = fs
	}
	var de *DuplicateKeyError
	if _, err := AppendMemberFields(buf[:0], els[3]); !errors.As(err, &de) || de.Key != "b" {
		t.Errorf("duplicate b: %v", err)
	}
	if _, err := AppendMemberFields(nil, json.RawMessage(`[1]`)); !errors.Is(err, ErrNotObject) {
		t.Errorf("array: %v; want ErrNotObject", err)
	}
}

// TestCommonKeysAreNotCopied: the keys every skill entry repeats come
// back without an allocation each.
func TestCommonKeysAreNotCopied(t *testing.T) {
	raw := []byte(`{"uri":"u","digest":"d","size":1}`)
	buf := make([]Field, 0, 4)
	n := testing.AllocsPerRun(100, func() { buf, _ = AppendMemberFields(buf[:0], raw) })
	if n != 0 {
		t.Errorf("%v allocations splitting a file item, want 0", n)
	}
	if buf[0].Key != "uri" || buf[1].Key != "digest" || buf[2].Key != "size" {
		t.Errorf("keys = %q", buf)
	}
}

// TestStringEnd: a string ends at the first quote not escaped by an odd
// run of backslashes, wherever the run starts.
func TestStringEnd(t *testing.T) {
	for _, s := range []string{`""`, `"a"`, `"\""`, `"\\"`, `"\\\""`, `"\\\\"`, `"a\\\"b\\"`, `"\u0022"`, `"` + strings.Repeat(`\\`, 40) + `"`, `"` + strings.Repeat("x", 100) + `\"` + strings.Repeat("y", 100) + `"`} {
		var v string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		b := []byte(s + `,"next"`)
		if got := stringEnd(b, 0); got != len(s) {
			t.Errorf("stringEnd(%s) = %d, want %d", b, got, len(s))
		}
	}
}
