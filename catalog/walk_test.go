// Tests of the descriptor walk and the reload shortcut: a reload must
// publish exactly what a fresh build of the changed tree publishes, on
// both walks, and the portable walk (by path through os.Root) must still pass the containment
// tests where the descriptor walk is used by default.

package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/skilltest"
)

func catalogState(c *Catalog) (ids []string) {
	ids = append(ids, "ID="+c.ID())
	for _, d := range c.Diagnostics() {
		ids = append(ids, "D:"+d.Path+":"+d.Rule+":"+d.Message)
	}
	for u, d := range c.dirs {
		names := []string{}
		for _, ch := range d.Children {
			names = append(names, ch.Name)
		}
		ids = append(ids, "DIR:"+u+":"+filepath.Join(names...))
	}
	for u, f := range c.files {
		ids = append(ids, "F:"+u+":"+f.Digest+":"+f.MIMEType)
	}
	slices.Sort(ids)
	return ids
}

func TestWalkReloadMatchesFresh(t *testing.T) {
	old := racyWindow
	racyWindow = -time.Hour // trust every listing: exercise the fast path
	defer func() { racyWindow = old }()
	for _, fd := range []bool{true, false} {
		useFDWalk = fd && fdWalkSupported
		mutations := map[string]func(t *testing.T, dir string){
			"none": func(t *testing.T, dir string) {},
			"content": func(t *testing.T, dir string) {
				p := filepath.Join(dir, "pdf", "references", "FORMS.md")
				fi, _ := os.Stat(p)
				data, _ := os.ReadFile(p)
				data[0] ^= 1
				os.WriteFile(p, data, 0o644)
				os.Chtimes(p, fi.ModTime(), fi.ModTime())
			},
			"add-file":     func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, "pdf", "new.md"), []byte("x"), 0o644) },
			"add-emptydir": func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "pdf", "emptydir"), 0o755) },
			"remove-file":  func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "pdf", "references", "FORMS.md")) },
			"symlink":      func(t *testing.T, dir string) { os.Symlink("SKILL.md", filepath.Join(dir, "pdf", "alias.md")) },
			"fifo":         func(t *testing.T, dir string) { mkfifo(filepath.Join(dir, "pdf", "p")) },
			"new-skill": func(t *testing.T, dir string) {
				os.MkdirAll(filepath.Join(dir, "zz"), 0o755)
				os.WriteFile(filepath.Join(dir, "zz", "SKILL.md"), []byte(md("zz", "d")), 0o644)
			},
			"bad-skill": func(t *testing.T, dir string) {
				os.WriteFile(filepath.Join(dir, "pdf", "SKILL.md"), []byte("no frontmatter"), 0o644)
			},
			"dotfile": func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, "pdf", ".env"), []byte("x"), 0o644) },
		}
		for name, mutate := range mutations {
			t.Run(name, func(t *testing.T) {
				dir := skilltest.WriteTree(t, tree)
				c1, err := OpenDir(dir, &Options{Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				c2, _ := c1.Reload()
				if got, want := catalogState(c2), catalogState(c1); !slices.Equal(got, want) {
					t.Fatalf("unchanged reload differs")
				}
				// (an unchanged full build shares them too: see shareUnchanged)
				if fd && reflect.ValueOf(c2.files).UnsafePointer() != reflect.ValueOf(c1.files).UnsafePointer() {
					t.Errorf("fast path not taken? %+v", c2.Stats())
				}
				mutate(t, dir)
				for i, c := range []*Catalog{c2, c1} { // c1 is not the listings' owner
					r, err := c.Reload()
					if err != nil {
						t.Fatal(err)
					}
					fresh, _ := OpenDir(dir, &Options{Logger: quiet})
					if got, want := catalogState(r), catalogState(fresh); !slices.Equal(got, want) {
						t.Errorf("fd=%v reload %d after %s differs from a fresh build:\n got %v\nwant %v", fd, i, name, got, want)
					}
					r2, _ := r.Reload() // and again (now possibly the fast path)
					if got, want := catalogState(r2), catalogState(fresh); !slices.Equal(got, want) {
						t.Errorf("fd=%v second reload %d after %s differs from a fresh build", fd, i, name)
					}
				}
			})
		}
	}
	useFDWalk = fdWalkSupported
}

func TestWalkPortableWalkStillWorks(t *testing.T) {
	useFDWalk = false
	defer func() { useFDWalk = fdWalkSupported }()
	TestSymlinks(t)
	TestReadFileDetectsChangeAndReloadRehashes(t)
	TestReloadReusesDigests(t)
	TestSameCatalogAcrossFS(t)
}

// TestWalkReusedReadBuffersDoNotLeak builds trees whose SKILL.md files are
// read into one reused buffer (one worker), small ones in that buffer and
// large ones beside it, and checks that every skill keeps its own
// frontmatter, findings and digest: nothing published may point into a
// buffer that the next file overwrites.
func TestWalkReusedReadBuffersDoNotLeak(t *testing.T) {
	files := map[string]string{}
	want := map[string]string{}
	for i := range 40 {
		name := fmt.Sprintf("skill-%02d", i)
		desc := fmt.Sprintf("Skill number %d, %s.", i, strings.Repeat("ö", i*3))
		body := ""
		if i%4 == 0 { // larger than the read buffer
			body = strings.Repeat(fmt.Sprintf("line %d\n", i), 20<<10)
		}
		content := "---\nname: " + name + "\ndescription: " + desc + "\nmetadata:\n  n: \"" + strconv.Itoa(i) + "\"\n---\n" + body
		files[name+"/SKILL.md"] = content
		want[name] = desc + "|" + strconv.Itoa(i) + "|" + digest(content)
	}
	dir := skilltest.WriteTree(t, files)
	for _, fd := range []bool{true, false} {
		useFDWalk = fd && fdWalkSupported
		c, err := OpenDir(dir, &Options{Logger: quiet, Concurrency: 1})
		useFDWalk = fdWalkSupported
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Skills()) != len(want) {
			t.Fatalf("fd=%v: %d skills, want %d: %v", fd, len(c.Skills()), len(want), c.Diagnostics())
		}
		for _, s := range c.Skills() {
			md, _ := s.Frontmatter.Get("metadata")
			got := s.Frontmatter.Description() + "|" + fmt.Sprint(md.(map[string]any)["n"]) + "|" + s.Files[0].Digest
			if got != want[s.Name] {
				t.Errorf("fd=%v: %s: got %q, want %q", fd, s.Name, got, want[s.Name])
			}
		}
	}
}
