package catalog_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/skillport/skillport/catalog"
)

// One table serves every publisher; these are the extensions the
// gateway's former copy got wrong.
func TestMIMETypeOneTable(t *testing.T) {
	for _, tc := range []struct {
		name, mime string
		text       bool
	}{
		{"a.cjs", "text/javascript", true},
		{"a.htm", "text/html", true},
		{"a.tsv", "text/tab-separated-values", true},
		{"SKILL.md", "text/markdown", true},
		{"a.JSON", "application/json", true},
		{"a.svg", "image/svg+xml", true},
		{"a.png", "image/png", false},
		{"a.pdf", "application/pdf", false},
		{"a.unknown", "application/octet-stream", false},
		{"Makefile", "application/octet-stream", false},
	} {
		if got := catalog.MIMEType(tc.name, false); got != tc.mime {
			t.Errorf("MIMEType(%q) = %q, want %q", tc.name, got, tc.mime)
		}
		if got := catalog.TextType(tc.name); got != tc.text {
			t.Errorf("TextType(%q) = %t, want %t", tc.name, got, tc.text)
		}
	}
	if got := catalog.MIMEType("Makefile", true); got != "text/plain" {
		t.Errorf("MIMEType of unknown text = %q, want text/plain", got)
	}
}

// DirsOf derives from URIs the same directory resources a catalog builds
// from its tree.
func TestDirsOfMatchesTheCatalog(t *testing.T) {
	md := func(name string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("---\nname: " + name + "\ndescription: D.\n---\n")}
	}
	tree := fstest.MapFS{
		"acme/billing/refunds/SKILL.md":        md("refunds"),
		"acme/billing/refunds/ex/email one.md": {Data: []byte("x")},
		"acme/billing/refunds/ex/b.txt":        {Data: []byte("y")},
		"acme/billing/SKILL.md":                md("billing"),
		"acme/billing/notes.md":                {Data: []byte("z")},
		"pdf/SKILL.md":                         md("pdf"),
	}
	cat, err := catalog.Open(tree, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := catalog.DirsOf(cat.Skills())
	if len(dirs) == 0 {
		t.Fatal("no directories derived")
	}
	for uri, d := range dirs {
		want := cat.Dir(uri)
		if want == nil {
			t.Errorf("DirsOf made %s, which the catalog does not serve", uri)
			continue
		}
		if (d.Skill == nil) != (want.Skill == nil) || d.Skill != nil && d.Skill.URI != want.Skill.URI {
			t.Errorf("%s: skill %v, want %v", uri, d.Skill, want.Skill)
		}
		var got, exp []string
		for _, c := range d.Children {
			got = append(got, c.URI+"|"+c.Name+"|"+strings.Repeat("f", btoi(c.File != nil)))
		}
		for _, c := range want.Children {
			exp = append(exp, c.URI+"|"+c.Name+"|"+strings.Repeat("f", btoi(c.File != nil)))
		}
		if strings.Join(got, " ") != strings.Join(exp, " ") {
			t.Errorf("%s:\n got  %v\n want %v", uri, got, exp)
		}
	}
	for _, uri := range []string{"skill://acme", "skill://acme/billing", "skill://acme/billing/refunds/ex", "skill://pdf"} {
		if dirs[uri] == nil {
			t.Errorf("DirsOf is missing %s", uri)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestNewSkill(t *testing.T) {
	sk, err := catalog.NewSkill("skill://acme/pdf", map[string][]byte{
		"SKILL.md":            []byte("---\nname: pdf\ndescription: PDFs.\n---\n"),
		"references/FORMS.md": []byte("Fill."),
		"a b.bin":             {0, 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sk.URI != "skill://acme/pdf/SKILL.md" || sk.Name != "pdf" || sk.Files[0].URI != sk.URI || len(sk.Files) != 3 || sk.Size != 7+int64(len("---\nname: pdf\ndescription: PDFs.\n---\n")) {
		t.Fatalf("got %+v", sk)
	}
	bin := sk.Files[1]
	if bin.URI != "skill://acme/pdf/a%20b.bin" || bin.Name != "a b.bin" || bin.Text || bin.MIMEType != "application/octet-stream" {
		t.Fatalf("binary file: %+v", bin)
	}
	// The digest is the one a catalog of the same bytes publishes.
	cat, _ := catalog.Open(fstest.MapFS{"pdf/references/FORMS.md": {Data: []byte("Fill.")}, "pdf/SKILL.md": {Data: []byte("---\nname: pdf\ndescription: PDFs.\n---\n")}}, nil)
	if want := cat.File("skill://pdf/references/FORMS.md").Digest; sk.Files[2].Digest != want {
		t.Fatalf("digest %s, catalog says %s", sk.Files[2].Digest, want)
	}
	for name, tc := range map[string]struct {
		root  string
		files map[string][]byte
	}{
		"no SKILL.md":       {"skill://pdf", map[string][]byte{"a.md": nil}},
		"name differs":      {"skill://other", map[string][]byte{"SKILL.md": []byte("---\nname: pdf\ndescription: D.\n---\n")}},
		"no frontmatter":    {"skill://pdf", map[string][]byte{"SKILL.md": []byte("# pdf")}},
		"root without path": {"skill://", map[string][]byte{"SKILL.md": nil}},
		"not a URI":         {"pdf", map[string][]byte{"SKILL.md": nil}},
		"dot-dot file":      {"skill://pdf", map[string][]byte{"SKILL.md": []byte("---\nname: pdf\ndescription: D.\n---\n"), "../x": nil}},
		"empty segment":     {"skill://pdf", map[string][]byte{"SKILL.md": []byte("---\nname: pdf\ndescription: D.\n---\n"), "a//x": nil}},
	} {
		if _, err := catalog.NewSkill(tc.root, tc.files); err == nil {
			t.Errorf("%s: NewSkill succeeded", name)
		}
	}
}

// A diagnostic encodes as the object `skillport validate --json` prints.
func TestDiagnosticJSON(t *testing.T) {
	cat, err := catalog.Open(fstest.MapFS{"x/SKILL.md": {Data: []byte("no frontmatter")}}, &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cat.Diagnostics()[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if strings.Join(keys, ",") != "column,line,message,path,rule,severity" || m["severity"] != "error" || m["path"] != "x/SKILL.md" {
		t.Fatalf("%s", b)
	}
}
