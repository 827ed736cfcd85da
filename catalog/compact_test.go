package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/skilltest"
)

// checkLinked fails unless every index of c reaches the same objects: the
// file a skill lists is the one File(uri) returns and the one its
// directory's child points at, each directory's skill is the one Skill
// returns, and each child directory is a directory of the catalog.
func checkLinked(t *testing.T, c *Catalog) {
	t.Helper()
	nfiles := 0
	for _, s := range c.Skills() {
		if c.Skill(s.URI) != s {
			t.Errorf("Skill(%s) is not the skill Skills lists", s.URI)
		}
		if s.Root+"/SKILL.md" != s.URI || !strings.HasSuffix(s.Path, s.Name) || len(s.Files) == 0 || s.Files[0].URI != s.URI {
			t.Errorf("skill %s: root %q, path %q, name %q", s.URI, s.Root, s.Path, s.Name)
		}
		for _, f := range s.Files {
			if c.File(f.URI) != f {
				t.Errorf("skill %s lists %s, which File does not return", s.URI, f.URI)
			}
			nfiles++
		}
	}
	if nfiles < c.Stats().Files {
		t.Errorf("skills list %d files, the catalog has %d", nfiles, c.Stats().Files)
	}
	for uri, d := range c.dirs {
		if d.URI != uri || c.Dir(uri) != d {
			t.Errorf("directory %s is indexed as %s", d.URI, uri)
		}
		if d.Skill != nil && c.Skill(d.Skill.URI) != d.Skill {
			t.Errorf("directory %s belongs to a skill the catalog does not publish", uri)
		}
		for _, ch := range d.Children {
			switch {
			case ch.File != nil && (c.File(ch.URI) != ch.File || ch.Name != ch.File.Name):
				t.Errorf("directory %s: child %s is not the published file", uri, ch.URI)
			case ch.File == nil && c.Dir(ch.URI) == nil:
				t.Errorf("directory %s: child %s is not a directory of the catalog", uri, ch.URI)
			case !strings.HasPrefix(ch.URI, uri+"/"):
				t.Errorf("directory %s: child %s is not below it", uri, ch.URI)
			}
		}
	}
}

// The compacted catalog is the catalog: same URIs, names and paths,
// every index reaching one object, and a reload after a change keeps the
// files that did not change as the objects the previous snapshot
// published (and only those), so that an unchanged reload still shares.
func TestCompactKeepsCatalog(t *testing.T) {
	files := map[string]string{
		"Acme Corp/pdf-tools/SKILL.md":        md("pdf", "PDFs."),
		"Acme Corp/pdf-tools/refs/FORMS.md":   "# Forms\n",
		"Acme Corp/pdf-tools/refs/a b.md":     "spaces",
		"Acme Corp/pdf-tools/forms/SKILL.md":  md("forms", "Forms."),
		"Acme Corp/pdf-tools/forms/guide.txt": "héllo",
		"notes/SKILL.md":                      md("notes", "Notes."),
		"notes/ünï.md":                        "unicode",
	}
	dir := skilltest.WriteTree(t, files)
	c, err := OpenDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkLinked(t, c)
	want := map[string]string{
		"skill://acme-corp/pdf/SKILL.md":        "Acme Corp/pdf-tools/SKILL.md",
		"skill://acme-corp/pdf/refs/a%20b.md":   "Acme Corp/pdf-tools/refs/a b.md",
		"skill://acme-corp/pdf/forms/guide.txt": "Acme Corp/pdf-tools/forms/guide.txt",
		"skill://notes/%C3%BCn%C3%AF.md":        "notes/ünï.md",
	}
	for uri, p := range want {
		f := c.File(uri)
		if f == nil {
			t.Fatalf("%s is not published; files: %v", uri, c.files)
		}
		if f.Path != p || f.Name != filepath.Base(p) || f.Digest != digest(files[p]) {
			t.Errorf("%s: path %q, name %q, digest %s; want %q, %q, %s", uri, f.Path, f.Name, f.Digest, p, filepath.Base(p), digest(files[p]))
		}
	}
	if d := c.Dir("skill://acme-corp/pdf/refs"); d == nil || len(d.Children) != 2 || d.Children[0].Name != "FORMS.md" || d.Children[1].Name != "a b.md" {
		t.Errorf("directory refs: %+v", d)
	}

	if err := os.WriteFile(filepath.Join(dir, "notes/ünï.md"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	next, err := c.Reload()
	if err != nil {
		t.Fatal(err)
	}
	checkLinked(t, next)
	const kept, changed = "skill://acme-corp/pdf/refs/FORMS.md", "skill://notes/%C3%BCn%C3%AF.md"
	if next.File(kept) != c.File(kept) {
		t.Errorf("an unchanged file is a new object after the reload")
	}
	if f := next.File(changed); f == c.File(changed) || f.Digest != digest("changed") {
		t.Errorf("the changed file: %+v", f)
	}
	again, err := next.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if again.Skill("skill://notes/SKILL.md") != next.Skill("skill://notes/SKILL.md") {
		t.Errorf("an unchanged reload of a compacted catalog does not share it")
	}
}
