package skill

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseFrontmatterJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // compact JSON
	}{
		{"minimal", "---\nname: a\ndescription: b\n---\nbody", `{"name":"a","description":"b"}`},
		{"order kept", "---\nzeta: 1\nalpha: 2\nname: x\n---\n", `{"zeta":1,"alpha":2,"name":"x"}`},
		{"core schema scalars", "---\na: true\nb: False\nc: ~\nd:\ne: null\nf: 12\ng: -0\nh: 0o17\ni: 0x1F\nj: 1.50\nk: .5\nl: 1e3\nm: yes\nn: 2024-01-02\no: '12'\n---\n",
			`{"a":true,"b":false,"c":null,"d":null,"e":null,"f":12,"g":0,"h":15,"i":31,"j":1.50,"k":0.5,"l":1e3,"m":"yes","n":"2024-01-02","o":"12"}`},
		{"big integer stays exact", "---\nn: 123456789012345678901234567890\n---\n", `{"n":123456789012345678901234567890}`},
		{"leading zeros are decimal in YAML 1.2", "---\nn: 0755\n---\n", `{"n":755}`},
		{"metadata map", "---\nmetadata:\n  version: \"1.0\"\n  author: me\n---\n", `{"metadata":{"version":"1.0","author":"me"}}`},
		{"lists and flow", "---\ntags: [a, b]\nnested:\n  - x: 1\n---\n", `{"tags":["a","b"],"nested":[{"x":1}]}`},
		{"block scalars", "---\nd: |\n  line one\n  line two\nf: >-\n  folded\n  text\n---\n", `{"d":"line one\nline two\n","f":"folded text"}`},
		{"escapes", "---\nd: \"tab\\there \\u00e9\"\n---\n", `{"d":"tab\there é"}`},
		{"BOM and CRLF", "\xEF\xBB\xBF---\r\nname: a\r\ndescription: b\r\n---\r\nbody\r\n", `{"name":"a","description":"b"}`},
		{"delimiter with trailing blanks", "--- \nname: a\n---\t\n", `{"name":"a"}`},
		{"dashes inside values", "---\nname: a\ndescription: \"--- not a delimiter\"\n---\n", `{"name":"a","description":"--- not a delimiter"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := string(doc.Frontmatter.JSON()); got != tt.want {
				t.Errorf("frontmatter JSON\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseBodyByteExact(t *testing.T) {
	in := "---\r\nname: a\r\n---\r\n# Title\r\n\r\n  indented\ttab\n---\nnot frontmatter\n"
	doc, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\r\n\r\n  indented\ttab\n---\nnot frontmatter\n"
	if string(doc.Body) != want {
		t.Errorf("body %q, want %q", doc.Body, want)
	}
	if doc.BodyLine != 4 {
		t.Errorf("BodyLine %d, want 4", doc.BodyLine)
	}
	doc, err = Parse([]byte("---\nname: a\n---"))
	if err != nil || len(doc.Body) != 0 {
		t.Errorf("no trailing newline: body %q, err %v", doc.Body, err)
	}
}

func TestParseErrors(t *testing.T) {
	bomb := "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n---\n"
	deep := "---\na: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n---\n"
	tests := []struct {
		name     string
		in       string
		sentinel error
		rule     string
		line     int
		msg      string // substring of the message
	}{
		{"empty file", "", ErrNoFrontmatter, RuleFrontmatterMissing, 1, "missing"},
		{"no frontmatter", "# Title\n", ErrNoFrontmatter, RuleFrontmatterMissing, 1, "must start with"},
		{"unterminated", "---\nname: a\ndescription: b\n", ErrUnterminated, RuleFrontmatterUnterminated, 1, "never closed"},
		{"not a mapping (list)", "---\n- a\n- b\n---\n", ErrNotMapping, RuleFrontmatterType, 2, "sequence"},
		{"not a mapping (scalar)", "---\njust text\n---\n", ErrNotMapping, RuleFrontmatterType, 2, "scalar"},
		{"empty frontmatter", "---\n---\n", ErrNotMapping, RuleFrontmatterType, 1, "empty"},
		{"billion laughs", bomb, ErrAlias, RuleFrontmatterSyntax, 2, "anchors and aliases"},
		{"alias in value", "---\nname: &n a\ndescription: *n\n---\n", ErrAlias, RuleFrontmatterSyntax, 2, "aliases"},
		{"merge key", "---\nbase: {a: 1}\nother:\n  <<: {a: 2}\n---\n", ErrKeyType, RuleFrontmatterSyntax, 4, "merge"},
		{"custom tag", "---\nname: !!python/object x\n---\n", ErrTag, RuleFrontmatterSyntax, 2, "tag"},
		{"explicit str tag", "---\nname: !!str a\n---\n", ErrTag, RuleFrontmatterSyntax, 2, "tag"},
		{"duplicate key", "---\nname: a\ndescription: b\nname: c\n---\n", ErrDuplicateKey, RuleFrontmatterDuplicate, 4, `duplicate key "name"`},
		{"nested duplicate key", "---\nmetadata:\n  a: 1\n  a: 2\n---\n", ErrDuplicateKey, RuleFrontmatterDuplicate, 4, `"a"`},
		{"integer key", "---\n1: a\n---\n", ErrKeyType, RuleFrontmatterSyntax, 2, "integer"},
		{"complex key", "---\n? [a, b]\n: c\n---\n", ErrKeyType, RuleFrontmatterSyntax, 2, "keys"},
		{"infinity", "---\nx: .inf\n---\n", ErrUnrepresentable, RuleFrontmatterSyntax, 2, "JSON"},
		{"nan", "---\nx: .nan\n---\n", ErrUnrepresentable, RuleFrontmatterSyntax, 2, "JSON"},
		{"float overflow", "---\nx: 1e999\n---\n", ErrUnrepresentable, RuleFrontmatterSyntax, 2, "range"},
		{"too deep", deep, ErrTooDeep, RuleFrontmatterSyntax, 2, "deep"},
		{"bad yaml", "---\nname: [unclosed\n---\n", ErrSyntax, RuleFrontmatterSyntax, 0, "invalid YAML"},
		{"tab indentation", "---\nmetadata:\n\ta: b\n---\n", ErrSyntax, RuleFrontmatterSyntax, 0, "invalid YAML"},
		{"two documents", "---\nname: a\n...\nother: b\n---\n", ErrSyntax, RuleFrontmatterSyntax, 0, "invalid YAML"},
		{"too large", "---\nd: \"" + strings.Repeat("x", MaxFrontmatterBytes+10) + "\"\n---\n", ErrTooLarge, RuleFrontmatterSize, 2, "larger than"},
		{"too large, unterminated", "---\n" + strings.Repeat("a: b\n", MaxFrontmatterBytes), ErrTooLarge, RuleFrontmatterSize, 2, "larger than"},
		{"invalid UTF-8", "---\nname: a\xff\n---\n", ErrInvalidUTF8, RuleEncoding, 0, "byte offset 11"},
		{"UTF-16", "\xff\xfe-\x00-\x00-\x00", ErrInvalidUTF8, RuleEncoding, 0, "byte offset 0"},
		{"NUL", "---\nname: a\n---\nbody\x00", ErrNUL, RuleEncoding, 0, "byte offset 20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse succeeded with %s, want an error", doc.Frontmatter.JSON())
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v does not wrap %v", err, tt.sentinel)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.Rule != tt.rule {
				t.Errorf("rule %q, want %q", pe.Rule, tt.rule)
			}
			if tt.line != 0 && pe.Line != tt.line {
				t.Errorf("line %d, want %d (%v)", pe.Line, tt.line, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("message %q does not contain %q", err.Error(), tt.msg)
			}
		})
	}
}

func TestParseSyntaxErrorLine(t *testing.T) {
	// go-yaml's line numbers are relative to the YAML text; ours are file lines.
	_, err := Parse([]byte("---\nname: a\ndescription: [x\nother: y\n---\n"))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line < 2 || !errors.Is(err, ErrSyntax) {
		t.Fatalf("got %v, want a syntax error located in the file (line 2 or later)", err)
	}
}

func TestFrontmatterPositions(t *testing.T) {
	doc, err := Parse([]byte("---\nname: pdf\ndescription: Does things.\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l, c := doc.Frontmatter.Position("description"); l != 3 || c != 14 {
		t.Errorf("description at %d:%d, want 3:14", l, c)
	}
}

func TestFrontmatterUnmarshalJSON(t *testing.T) {
	var f Frontmatter
	if err := f.UnmarshalJSON([]byte(`{ "b": 1, "a": {"x": [1, 2.0]} }`)); err != nil {
		t.Fatal(err)
	}
	if got := string(f.JSON()); got != `{"b":1,"a":{"x":[1,2.0]}}` {
		t.Errorf("compact %s", got)
	}
	if got := f.Keys(); len(got) != 2 || got[0] != "b" {
		t.Errorf("keys %v", got)
	}
	for _, bad := range []string{`[]`, `"x"`, `null`, `{"a":1,"a":2}`, `{"m":{"a":1,"a":2}}`, `{"a":`, `{"a":1}x`} {
		var g Frontmatter
		if err := g.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("UnmarshalJSON(%s) succeeded, want error", bad)
		}
	}
}

func TestFrontmatterDiff(t *testing.T) {
	parse := func(s string) Frontmatter {
		t.Helper()
		var f Frontmatter
		if err := f.UnmarshalJSON([]byte(s)); err != nil {
			t.Fatal(err)
		}
		return f
	}
	yamlFM := func(s string) Frontmatter {
		t.Helper()
		doc, err := Parse([]byte("---\n" + s + "---\n"))
		if err != nil {
			t.Fatal(err)
		}
		return doc.Frontmatter
	}
	tests := []struct {
		a, b Frontmatter
		want string
	}{
		{yamlFM("name: a\nv: 1.0\n"), parse(`{"name":"a","v":1}`), ""},
		{yamlFM("name: a\nv: 1e3\n"), parse(`{"v":1000,"name":"a"}`), ""},
		{yamlFM("name: a\n"), parse(`{"name":"a","allowed-tools":"Bash"}`), "allowed-tools"},
		{yamlFM("name: a\ndescription: benign\n"), parse(`{"name":"a","description":"evil"}`), "description"},
		{yamlFM("m: {a: '1'}\n"), parse(`{"m":{"a":1}}`), "m"},
		{yamlFM("l: [a, b]\n"), parse(`{"l":["b","a"]}`), "l"},
		{yamlFM("x: null\n"), parse(`{"x":false}`), "x"},
		{yamlFM("x: true\n"), parse(`{"x":"true"}`), "x"},
	}
	for i, tt := range tests {
		got := strings.Join(tt.a.Diff(tt.b), ",")
		if got != tt.want {
			t.Errorf("%d: Diff(%s, %s) = %q, want %q", i, tt.a.JSON(), tt.b.JSON(), got, tt.want)
		}
		if tt.a.Equal(tt.b) != (tt.want == "") {
			t.Errorf("%d: Equal disagrees with Diff", i)
		}
	}
}

func TestFrontmatterFromMap(t *testing.T) {
	f, err := FrontmatterFromMap([]string{"name", "n"}, map[string]any{"name": "x", "n": 3})
	if err != nil {
		t.Fatal(err)
	}
	if string(f.JSON()) != `{"name":"x","n":3}` {
		t.Errorf("got %s", f.JSON())
	}
	if _, err := FrontmatterFromMap([]string{"missing"}, nil); err == nil {
		t.Error("missing key accepted")
	}
}

// FuzzParse checks that no input crashes the parser, and that whatever it
// accepts is a JSON object that round-trips through UnmarshalJSON unchanged.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.md")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("---\nname: a\ndescription: b\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Parse(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Rule == "" || pe.Msg == "" {
				t.Fatalf("error without rule or message: %#v", err)
			}
			return
		}
		var back Frontmatter
		if err := back.UnmarshalJSON(doc.Frontmatter.JSON()); err != nil {
			t.Fatalf("accepted frontmatter is not valid JSON: %v: %s", err, doc.Frontmatter.JSON())
		}
		if d := back.Diff(doc.Frontmatter); len(d) != 0 {
			t.Fatalf("round trip changed %v", d)
		}
		if !bytes.HasSuffix(data, doc.Body) {
			t.Fatalf("body is not the tail of the file")
		}
		_ = Validate(doc, "x")
	})
}
