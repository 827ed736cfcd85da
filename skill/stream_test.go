package skill

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// parserCases are SKILL.md files that a stream could read differently from
// a file alone: documents that end early or go on, markers, directives,
// line breaks go-yaml counts, anchors another document could define,
// errors that stop a stream, and values whose end depends on what follows.
var parserCases = []string{
	"---\nname: a\ndescription: b\n---\nbody\n",
	"---\r\nname: a\r\ndescription: b\r\n---\r\nbody",
	"\xEF\xBB\xBF---\nname: a\nmetadata:\n  k: v\n  n:\n    deep: [1, 2]\n---\n",
	"---\nname: a\r  x: y\rdescription: c\n---\n",
	"---\nname: a\nb: c\n\n\n# trailing comment\n---\n",
	"---\n# head comment\n\nname: a\n---\n",
	"---\nname: a\n--- \nb: c\n---\n",
	"---\nname: a\n...\nb: c\n---\n",
	"---\nname: a\n...\n---\n",
	"---\n%YAML 1.2\n---\n",
	"---\n{a: b} c\n---\n",
	"---\n{a: b}\n{c: d}\n---\n",
	"---\n{a: b}\n---\n",
	"---\n  name: a\nb: c\n---\n",
	"---\n  name: a\n  b: c\n---\n",
	"---\n- a\n- b\n---\n",
	"---\njust text\n---\n",
	"---\n---\n",
	"---\n\n---\n",
	"---\n# only a comment\n---\n",
	"---\na: &x 1\nb: *x\n---\n",
	"---\nb: *x\n---\n",
	"---\na: !!str 1\n---\n",
	"---\na: !t 1\n---\n",
	"---\n!!map\na: 1\n---\n",
	"---\na: \"\\ud83c\\udfe6\"\n---\n",
	"---\na: \\ud83c\\udfe6\n---\n",
	"---\na: \"unterminated\n---\n",
	"---\na: 'unterminated\n---\n",
	"---\na: [1, 2\n---\n",
	"---\na: {b: 1\n---\n",
	"---\na: |+\n  kept\n\n\n---\n",
	"---\na: |-\n  stripped\n\n---\n",
	"---\na: >\n  folded\n  text\n---\n",
	"---\na: plain\n  continued\n---\n",
	"---\na: b: c\n---\n",
	"---\na:\tb\n---\n",
	"---\n\ta: b\n---\n",
	"---\na: 1\na: 2\n---\n",
	"---\n? [a]\n: b\n---\n",
	"---\n<<: {a: 1}\n---\n",
	"---\na: .inf\n---\n",
	"---\na: 0x1F\nb: 0o17\nc: 1e3\nd: ~\ne: true\n---\n",
	"---\na: 1\n\u2028b: 2\n---\n",
	"---\na: 1\u0085b: 2\n---\n",
	"---\na: \ufeff1\n---\n",
	"---\nname: a\n",
	"no frontmatter\n",
	"---\na: \xff\n---\n",
	"---\na: b\x00\n---\n",
	"---\nname: 東京\ndescription: \"データ\"\n---\n",
	"---\na: \"line\n  two\"\n---\n",
	"---\na:\n- x\n- y\n---\n",
	"---\na:\n  - x\n  -\n---\n",
	"---\n\"quoted key\": 1\n'other': 2\n---\n",
	"---\na: 1 # comment\n---\n",
	"---\na: |\n---\n",
}

// checkSame fails unless p.Parse and Parse agree on data in every field.
func checkSame(t *testing.T, p *Parser, data []byte) {
	t.Helper()
	got, gerr := p.Parse(data)
	want, werr := Parse(data)
	if !reflect.DeepEqual(gerr, werr) {
		t.Fatalf("Parser.Parse(%q): error %v, Parse: %v", data, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		var gj, wj []byte
		if got != nil {
			gj = got.Frontmatter.JSON()
		}
		if want != nil {
			wj = want.Frontmatter.JSON()
		}
		t.Fatalf("Parser.Parse(%q) = %s %+v, Parse: %s %+v", data, gj, got, wj, want)
	}
}

// TestParserMatchesParse parses the cases one after another with one
// Parser, and every pair of them with a fresh one, and checks every result
// against Parse's.
func TestParserMatchesParse(t *testing.T) {
	cases := parserCases
	seeds, _ := filepath.Glob("testdata/*.md")
	collections, _ := filepath.Glob("testdata/collections/*.md")
	for _, f := range append(seeds, collections...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, string(b))
	}
	var p Parser
	for _, c := range cases {
		checkSame(t, &p, []byte(c))
	}
	for _, a := range cases {
		for _, b := range cases {
			var p Parser
			checkSame(t, &p, []byte(a))
			checkSame(t, &p, []byte(b))
		}
	}
}

// TestParserStreams checks that frontmatters that can share the stream do:
// a Parser that parsed one alone would lose what it is for.
func TestParserStreams(t *testing.T) {
	var p Parser
	for i := range 3 {
		checkSame(t, &p, []byte("---\nname: a\r\ndescription: b\n---\n"))
		if p.dec == nil || p.line != 1+6*(i+1) {
			t.Fatalf("document %d: not parsed in the stream (line %d)", i+1, p.line)
		}
	}
	for range 1000 {
		checkSame(t, &p, []byte("---\nname: a\ndescription: "+strings.Repeat("b", 300)+"\n---\n"))
	}
	if p.dec == nil || cap(p.feed.b) > 4096 {
		t.Fatalf("after 1,000 documents of 330 bytes: streaming %v, buffer of %d bytes", p.dec != nil, cap(p.feed.b))
	}
	checkSame(t, &p, []byte("---\na: [1\n---\n"))
	if p.dec != nil {
		t.Fatalf("the stream goes on after a document it refused")
	}
}

// FuzzParser checks that a Parser gives Parse's result for every file of a
// sequence (the input split at NUL bytes, which Parse refuses anyway).
func FuzzParser(f *testing.F) {
	f.Add([]byte(strings.Join(parserCases, "\x00")))
	for i := 0; i+1 < len(parserCases); i++ {
		f.Add([]byte(parserCases[i] + "\x00" + parserCases[i+1]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Parser
		for _, file := range bytes.Split(data, []byte{0}) {
			checkSame(t, &p, file)
		}
	})
}

// TestParserAllocates: what a Parser is for. Parsing a typical SKILL.md
// in a row with others allocates at most 60% of what Parse does.
func TestParserAllocates(t *testing.T) {
	data := []byte("---\nname: pdf-tools\ndescription: Extract text and tables from PDF files. Use when the task mentions a PDF.\n" +
		"license: Apache-2.0\nallowed-tools: [Read, Bash]\nmetadata:\n  owner: docs-team\n  version: \"1.2\"\n---\n\n# PDF tools\n")
	var p Parser
	bytesPer := func(parse func() (*Document, error)) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 200 {
			if _, err := parse(); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 200
	}
	alone := bytesPer(func() (*Document, error) { return Parse(data) })
	streamed := bytesPer(func() (*Document, error) { return p.Parse(data) })
	if streamed*10 > alone*6 {
		t.Errorf("Parser.Parse allocates %d bytes a file, Parse %d: want at most 60%%", streamed, alone)
	}
	t.Logf("Parser.Parse: %d bytes a file, Parse: %d", streamed, alone)
}
