package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillport/skillport/catalog/internal/gen"
	"github.com/skillport/skillport/skill"
)

// collectionTree copies testdata/collections to a temporary directory and
// adds what git cannot hold: symbolic links out of a shape's root and to
// nothing, and a hard link to a file outside it.
func collectionTree(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "collections")
	if err := os.CopyFS(dir, os.DirFS("testdata/collections")); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(tmp, "outside")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(outside, 0o755))
	must(os.WriteFile(filepath.Join(outside, "SKILL.md"), []byte(md("out", "d")), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	links := filepath.Join(dir, "links")
	for _, d := range []string{"out", "nowhere", "good"} {
		must(os.MkdirAll(filepath.Join(links, d), 0o755))
	}
	must(os.Symlink("../../../outside/SKILL.md", filepath.Join(links, "out", "SKILL.md")))
	must(os.Symlink("missing.md", filepath.Join(links, "nowhere", "SKILL.md")))
	must(os.WriteFile(filepath.Join(links, "good", "SKILL.md"), []byte(md("good", "d")), 0o644))
	must(os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "hardlinks", "linked", "data.txt")))
	return dir
}

// Each collection shape of real public collections, served from its own
// root: what is published, warned and refused, and why.
func TestCollections(t *testing.T) {
	dir := collectionTree(t)
	tests := []struct {
		shape     string
		opts      Options
		published []string
		diags     []string // path:rule:severity
	}{
		{"openclaw", Options{}, []string{"skill://empty-meta/SKILL.md", "skill://evals/SKILL.md", "skill://weather/SKILL.md"},
			[]string{"empty-meta/SKILL.md:metadata-type:warning", "evals/SKILL.md:metadata-type:warning", "evals/SKILL.md:metadata-type:warning", "weather/SKILL.md:metadata-type:warning"}},
		{"openclaw", Options{Strict: true}, nil,
			[]string{"empty-meta/SKILL.md:metadata-type:error", "evals/SKILL.md:metadata-type:error", "evals/SKILL.md:metadata-type:error", "weather/SKILL.md:metadata-type:error"}},
		{"tools", Options{}, []string{"skill://editor/SKILL.md", "skill://shell/SKILL.md"},
			[]string{"editor/SKILL.md:allowed-tools-type:warning", "shell/SKILL.md:allowed-tools-type:warning"}},
		{"tools", Options{Strict: true}, nil,
			[]string{"editor/SKILL.md:allowed-tools-type:error", "shell/SKILL.md:allowed-tools-type:error"}},
		{"emoji", Options{Strict: true}, []string{"skill://bank/SKILL.md"}, nil},
		{"crlf", Options{}, []string{"skill://windows/SKILL.md"}, []string{"windows/SKILL.md:metadata-type:warning"}},
		{"mirror", Options{}, []string{
			"skill://composiohq--awesome-claude-skills/pdf-tools/SKILL.md",
			"skill://ja-jp/translate/SKILL.md",
			"skill://user-collection/notes/SKILL.md",
		}, []string{
			"Case/one-more:duplicate:error",
			"ComposioHQ--awesome-claude-skills:path:warning",
			"case/one:duplicate:error",
			"ja-JP:path:warning",
			"user@collection:path:warning",
		}},
		{"renamed", Options{}, []string{"skill://compose-gen/SKILL.md"}, []string{
			"docker-compose-gen/SKILL.md:name-directory:warning",
			"first-copy:duplicate:error",
			"second-copy:duplicate:error",
		}},
		{"renamed", Options{Strict: true}, nil, []string{
			"docker-compose-gen/SKILL.md:name-directory:error",
			"first-copy/SKILL.md:name-directory:error",
			"second-copy/SKILL.md:name-directory:error",
		}},
		{"entry", Options{}, nil, []string{"both:entry-file:error", "lower:entry-file:warning"}},
		{"broken", Options{}, nil, []string{
			"colon/SKILL.md:frontmatter-syntax:error",
			"no-frontmatter/SKILL.md:frontmatter-missing:error",
			"title/SKILL.md:name-format:error",
			"unclosed/SKILL.md:frontmatter-syntax:error",
		}},
		{"links", Options{}, []string{"skill://good/SKILL.md"}, []string{"nowhere/SKILL.md:symlink:error", "out/SKILL.md:symlink:error"}},
		{"hardlinks", Options{}, nil, []string{"hardlinks/linked/data.txt:hardlink:error"}},
		{"hardlinks", Options{AllowHardlinks: true}, []string{"skill://linked/SKILL.md"}, nil},
		{"My_Skill", Options{}, []string{"skill://my-skill/SKILL.md", "skill://my-skill/nested/SKILL.md"},
			[]string{"SKILL.md:name-directory:warning"}},
	}
	for _, tt := range tests {
		name := tt.shape
		if tt.opts.Strict {
			name += "/strict"
		}
		if tt.opts.AllowHardlinks {
			name += "/allow-hardlinks"
		}
		t.Run(name, func(t *testing.T) {
			o := tt.opts
			o.Logger = quiet
			c, err := OpenDir(filepath.Join(dir, tt.shape), &o)
			if err != nil {
				t.Fatal(err)
			}
			if got := uris(c); !slices.Equal(got, tt.published) {
				t.Errorf("published\n got %v\nwant %v", got, tt.published)
			}
			var got []string
			warned := map[string]bool{}
			for _, d := range c.Diagnostics() {
				p := d.Path
				if tt.shape == "hardlinks" {
					p = "hardlinks/" + p
				}
				got = append(got, fmt.Sprintf("%s:%s:%s", p, d.Rule, d.Severity))
				if d.Severity == skill.Warning && d.Skill != "" {
					warned[d.Skill] = true
				}
				if d.Message == "" || d.Severity == skill.Error && d.Err == nil {
					t.Errorf("diagnostic without message or sentinel: %+v", d)
				}
			}
			if !slices.Equal(got, tt.diags) {
				t.Errorf("diagnostics\n got %v\nwant %v\n%v", got, tt.diags, c.Diagnostics())
			}
			st := c.Stats()
			if st.Skills+st.Invalid+st.Skipped != st.Found {
				t.Errorf("counts do not add up: %+v", st)
			}
			if n := countSKILLMD(t, filepath.Join(dir, tt.shape)); st.Found != n {
				t.Errorf("found %d skills, the tree holds %d", st.Found, n)
			}
			t.Logf("%s: %d found, %d published (%d with warnings), %d refused, %d skipped", name, st.Found, st.Skills, len(warned), st.Invalid, st.Skipped)
		})
	}
}

// countSKILLMD counts directories holding an entry named SKILL.md in any
// case, links included.
func countSKILLMD(t *testing.T, dir string) int {
	dirs := map[string]bool{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.EqualFold(d.Name(), "SKILL.md") {
			dirs[filepath.Dir(p)] = true
		}
		return nil
	})
	return len(dirs)
}

// Positions and advice on the fixture: a YAML error at its own line and
// column, metadata findings at the key, URIs of mapped folders.
func TestCollectionDetails(t *testing.T) {
	dir := collectionTree(t)
	for _, fd := range []bool{true, false} {
		useFDWalk = fd && fdWalkSupported
		c, err := OpenDir(dir, &Options{Logger: quiet})
		useFDWalk = fdWalkSupported
		if err != nil {
			t.Fatal(err)
		}
		find := func(path, rule string) Diagnostic {
			for _, d := range c.Diagnostics() {
				if d.Path == path && d.Rule == rule {
					return d
				}
			}
			t.Fatalf("fd=%v: no %s finding for %s in %v", fd, rule, path, c.Diagnostics())
			return Diagnostic{}
		}
		if d := find("broken/unclosed/SKILL.md", skill.RuleFrontmatterSyntax); d.Line != 3 || d.Column != 14 {
			t.Errorf("description: [unclosed at %d:%d, want 3:14", d.Line, d.Column)
		}
		if d := find("broken/colon/SKILL.md", skill.RuleFrontmatterSyntax); d.Line != 3 || d.Column != 22 || !strings.Contains(d.Message, `quoted: description: "Use when: you need a colon"`) {
			t.Errorf("unquoted colon: %d:%d %s", d.Line, d.Column, d.Message)
		}
		evals := 0
		for _, d := range c.Diagnostics() {
			if d.Path == "openclaw/evals/SKILL.md" {
				evals++
				if d.Column != 3 || (d.Line != 6 && d.Line != 7) {
					t.Errorf("metadata finding not at its key: %+v", d)
				}
			}
		}
		if evals != 2 {
			t.Errorf("%d findings for evals, want 2", evals)
		}
		// The whole tree from its root: the My_Skill folder is a skill
		// published under its name, nothing fails the run, and the counts
		// add up.
		for _, uri := range []string{
			"skill://mirror/ComposioHQ--awesome-claude-skills/pdf-tools/reference/Forms%20Guide.md",
			"skill://mirror/user@collection/notes/SKILL.md",
			"skill://mirror/Case/one-more/SKILL.md", // path segments keep their case
			"skill://mirror/case/one/SKILL.md",
			"skill://my-skill/nested/SKILL.md",
			"skill://renamed/compose-gen/templates/base.yml",
		} {
			if c.File(uri) == nil {
				t.Errorf("fd=%v: %s not published", fd, uri)
			}
		}
		if d := c.Dir("skill://renamed/compose-gen"); d == nil || d.Path != "renamed/docker-compose-gen" {
			t.Errorf("directory of a renamed skill: %+v", d)
		}
		if d := c.Dir("skill://mirror"); d == nil || !slices.ContainsFunc(d.Children, func(ch Child) bool { return ch.URI == "skill://mirror/ja-JP" }) {
			t.Errorf("prefix level: %+v", d)
		}
		st := c.Stats()
		if st.Skills+st.Invalid+st.Skipped != st.Found || st.Found != countSKILLMD(t, dir) {
			t.Errorf("fd=%v: counts %+v, tree holds %d", fd, st, countSKILLMD(t, dir))
		}
	}
}

// The generator's real-world tree: every skill is published (hard links
// allowed), the lenient shapes with a warning, and Strict refuses exactly
// those shapes.
func TestRealWorldTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	st, err := gen.Options{Skills: 400, Seed: 3, RealWorld: true}.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Renamed == 0 || st.Lenient == 0 || st.Hardlinks == 0 || st.Symlinks == 0 {
		t.Fatalf("the tree lacks a shape: %+v", st)
	}
	c, err := OpenDir(dir, &Options{Logger: quiet, AllowHardlinks: true})
	if err != nil {
		t.Fatal(err)
	}
	cs := c.Stats()
	if cs.Skills != st.Skills || cs.Invalid != 0 || cs.Found != st.Skills {
		t.Errorf("published %+v, the tree has %d skills: %v", cs, st.Skills, c.Diagnostics())
	}
	warned := map[string]bool{}
	prefixes := 0
	for _, d := range c.Diagnostics() {
		if d.Severity != skill.Warning {
			t.Errorf("error on the real-world tree: %+v", d)
		}
		if d.Skill == "" && d.Rule == RulePath { // a mapped prefix folder
			prefixes++
			continue
		}
		warned[d.Path] = true
	}
	if prefixes == 0 {
		t.Error("no warning about a mapped prefix folder")
	}
	if len(warned) != st.Lenient {
		t.Errorf("%d SKILL.md warned, the tree has %d lenient shapes", len(warned), st.Lenient)
	}
	c, err = OpenDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	hard := 0
	for _, d := range c.Diagnostics() {
		if d.Rule == RuleHardlink {
			hard++
		}
	}
	if hard < st.Hardlinks || c.Stats().Skills+c.Stats().Invalid != st.Skills {
		t.Errorf("hard links: %d findings for %d links; %+v", hard, st.Hardlinks, c.Stats())
	}
	c, err = OpenDir(dir, &Options{Logger: quiet, AllowHardlinks: true, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Stats().Invalid; got != st.Lenient {
		t.Errorf("Strict refused %d skills, want the %d lenient shapes", got, st.Lenient)
	}
}
