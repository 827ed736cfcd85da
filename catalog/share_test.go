package catalog

import (
	"os"
	"path/filepath"
	"testing"
)

// A reload that publishes exactly what its predecessor published shares the
// predecessor's skills, files and directories (one copy stays alive, not
// two); any change a client could see (content, a folder renamed under the
// same skill name, an empty directory added in a skill) gives new ones.
func TestReloadSharesUnchanged(t *testing.T) {
	for _, walk := range []string{"fd", "fs"} {
		t.Run(walk, func(t *testing.T) {
			dir := t.TempDir()
			write := func(p, s string) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("col/pdf-tools/SKILL.md", md("pdf", "d"))
			write("col/pdf-tools/references/forms.md", "# Forms\n")
			write("col/notes/SKILL.md", md("notes", "d"))
			write("col/notes/real.md", "notes\n")
			open := func() *Catalog {
				t.Helper()
				var c *Catalog
				var err error
				if walk == "fd" {
					// A link keeps the descriptor walk from concluding that nothing changed
					// without a full build: the full build is what must share.
					if err := os.Symlink("real.md", filepath.Join(dir, "col/notes/link.md")); err != nil && !os.IsExist(err) {
						t.Fatal(err)
					}
					c, err = OpenDir(dir, &Options{Logger: quiet})
				} else {
					c, err = Open(os.DirFS(dir), &Options{Logger: quiet})
				}
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			reload := func(c *Catalog) *Catalog {
				t.Helper()
				var next *Catalog
				var err error
				if walk == "fd" {
					next, err = c.Reload()
				} else {
					next, err = c.ReloadFS(os.DirFS(dir))
				}
				if err != nil {
					t.Fatal(err)
				}
				return next
			}
			const uri = "skill://col/pdf/SKILL.md"
			shared := func(a, b *Catalog) bool {
				return a.Skill(uri) == b.Skill(uri) && a.Dir("skill://col/pdf/references") == b.Dir("skill://col/pdf/references") &&
					a.File("skill://col/pdf/references/forms.md") == b.File("skill://col/pdf/references/forms.md")
			}

			c := open()
			next := reload(c)
			if next.ID() != c.ID() || !shared(c, next) {
				t.Fatalf("an unchanged reload does not share its predecessor's skills, files and directories")
			}
			if next.Stats().Skills != 2 || len(next.Diagnostics()) != len(c.Diagnostics()) {
				t.Errorf("counts or diagnostics changed: %+v, %+v", next.Stats(), c.Stats())
			}
			if again := reload(next); !shared(c, again) {
				t.Errorf("a second unchanged reload does not share")
			}

			// An empty directory in a skill: same ID (no file changed), a new directory resource.
			if err := os.Mkdir(filepath.Join(dir, "col/pdf-tools/empty"), 0o755); err != nil {
				t.Fatal(err)
			}
			withDir := reload(next)
			if withDir.Skill(uri) == next.Skill(uri) {
				t.Error("a reload with a new directory shares the old skills")
			}
			if withDir.Dir("skill://col/pdf/empty") == nil {
				t.Error("the new directory is not published")
			}

			// The folder renamed, the skill name kept: same URIs, new source paths.
			if err := os.Rename(filepath.Join(dir, "col/pdf-tools"), filepath.Join(dir, "col/pdf-kit")); err != nil {
				t.Fatal(err)
			}
			renamed := reload(withDir)
			if renamed.Skill(uri) == withDir.Skill(uri) {
				t.Fatal("a reload after a folder rename shares the old skills")
			}
			if got := renamed.Skill(uri).Dir; got != "col/pdf-kit" {
				t.Errorf("after the rename the skill is read from %q, want col/pdf-kit", got)
			}
			if data, err := renamed.ReadFile(renamed.File("skill://col/pdf/references/forms.md")); err != nil || string(data) != "# Forms\n" {
				t.Errorf("reading after the rename: %q, %v", data, err)
			}
		})
	}
}
