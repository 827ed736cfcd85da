package gitsource_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gitsource"
)

// TestReloadByTreeID moves a branch through commits that add, change,
// delete and collide skills at several levels. After each, the catalog the
// source reloads must equal a cold build of the new commit, and when one
// skill changed, the only blobs read must be that skill's changed files:
// every other skill is taken from the previous catalog by its tree id.
func TestReloadByTreeID(t *testing.T) {
	r := newRemote(t)
	files := map[string]string{
		"README.md":                 "# skills\n",
		"alpha/SKILL.md":            skillMD("alpha", "first"),
		"alpha/references/ref.md":   "# ref\n",
		"alpha/scripts/run.sh":      "#!/bin/sh\necho run\n",
		"beta/SKILL.md":             skillMD("beta", "second"),
		"team/one/SKILL.md":         skillMD("one", "in a team"),
		"team/two/SKILL.md":         skillMD("two", "in a team"),
		"team/two/notes.md":         "notes\n",
		"Team2/three/SKILL.md":      skillMD("three", "under a folder mapped to team2"),
		"outer/SKILL.md":            skillMD("outer", "holds a nested skill"),
		"outer/inner/SKILL.md":      skillMD("inner", "nested"),
		"outer/inner/data.txt":      "data\n",
		"docs/guide.md":             "no skill here\n",
		"deep/a/b/c/leaf/SKILL.md":  skillMD("leaf", "deep down"),
		"deep/a/b/c/leaf/README.md": "leaf\n",
	}
	for i := range 40 {
		name := fmt.Sprintf("f%02d", i)
		files[name+"/SKILL.md"] = skillMD(name, "filler")
		files[name+"/ref.md"] = "filler " + name + "\n"
	}
	r.commit("start", files)
	r.push("main")
	s := mustOpen(t, "git+"+r.fileURL()+"@main", nil)

	repo, err := gogit.PlainOpen(r.bare)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	read := map[plumbing.Hash]bool{}
	listed := map[string]bool{}
	defer gitsource.SetDirListed(func(p string) {
		mu.Lock()
		listed[p] = true
		mu.Unlock()
	})()
	defer gitsource.SetBlobRead(func(h plumbing.Hash) {
		mu.Lock()
		read[h] = true
		mu.Unlock()
	})()

	steps := []struct {
		name    string
		files   map[string]string
		onlyDir string // when set, every blob read is one of this folder's
		reads   int    // and this many are read
		chmod   string // a path to mark executable in the index first
	}{
		{"one skill's SKILL.md", map[string]string{"alpha/SKILL.md": skillMD("alpha", "first, edited")}, "alpha", 1, ""},
		{"one skill's reference", map[string]string{"alpha/references/ref.md": "# ref, edited\n"}, "alpha", 1, ""},
		// The blob id stays: only the tree entry's mode says 100755, and
		// the snapshot must not keep the File it had (#27 point 7).
		{"a script made executable", nil, "alpha", 1, "alpha/scripts/run.sh"},
		{"a nested skill", map[string]string{"outer/inner/SKILL.md": skillMD("inner", "nested, edited")}, "outer", 1, ""},
		{"a deep skill", map[string]string{"deep/a/b/c/leaf/README.md": "leaf, edited\n"}, "deep/a/b/c/leaf", 1, ""},
		{"a skill added to a level", map[string]string{"team/four/SKILL.md": skillMD("four", "new")}, "team/four", 1, ""},
		{"a skill deleted from a level", map[string]string{"team/one/SKILL.md": ""}, "team", 0, ""},
		{"an invalid skill", map[string]string{"beta/SKILL.md": "---\nname: beta\n---\nno description\n"}, "beta", 1, ""},
		{"the skill fixed", map[string]string{"beta/SKILL.md": skillMD("beta", "fixed")}, "beta", 2, ""},
		{"a skill renamed by its SKILL.md", map[string]string{"alpha/SKILL.md": skillMD("alpha-renamed", "published under its name")}, "alpha", 1, ""},
		{"a file outside skills", map[string]string{"README.md": "# skills, edited\n"}, ".", 0, ""},
		{"a skill named like its neighbour", map[string]string{"gamma/SKILL.md": skillMD("alpha", "collides")}, "", 0, ""},
		{"the collision removed", map[string]string{"gamma/SKILL.md": ""}, "", 0, ""},
		{"a folder mapped to the same segment", map[string]string{"team2/five/SKILL.md": skillMD("five", "collides with Team2")}, "", 0, ""},
		{"that folder removed", map[string]string{"team2/five/SKILL.md": ""}, "", 0, ""},
		{"a level emptied", map[string]string{"team/two/SKILL.md": "", "team/two/notes.md": "", "team/four/SKILL.md": ""}, "team", 0, ""},
		{"a wrongly cased entry above skills", map[string]string{"deep/a/skill.md": "---\nname: a\n---\n"}, "", 0, ""},
		{"a skill at the root", map[string]string{"SKILL.md": skillMD("root", "the root")}, "", 0, ""},
	}
	for _, st := range steps {
		if st.chmod != "" {
			git(t, r.work, "update-index", "--chmod=+x", "--", st.chmod)
		}
		commit := r.commit(st.name, st.files)
		r.push("main")
		mu.Lock()
		clear(read)
		clear(listed)
		mu.Unlock()
		next, changed, err := s.Update(context.Background())
		if err != nil || !changed {
			t.Fatalf("%s: Update: changed %v, %v", st.name, changed, err)
		}
		mu.Lock()
		seen, dirs := maps.Clone(read), slices.Sorted(maps.Keys(listed))
		mu.Unlock()
		fsys, err := gitsource.NewFS(repo.Storer, plumbing.NewHash(commit), "")
		if err != nil {
			t.Fatal(err)
		}
		cold, err := catalog.Open(fsys, &catalog.Options{Logger: newLogger(io.Discard)})
		if err != nil {
			t.Fatal(err)
		}
		sameCatalog(t, st.name, next, cold)
		if st.chmod != "" {
			if f := next.File("skill://alpha/scripts/run.sh"); f == nil || f.Mode != 0o755 {
				t.Errorf("%s: %+v, want mode 0755", st.name, f)
			}
		}
		if st.onlyDir == "" {
			continue
		}
		mine := map[plumbing.Hash]string{}
		// The folder's blobs, as the commit has them and as the one before had.
		lines := git(t, r.work, "ls-tree", "-r", commit) + "\n" + git(t, r.work, "ls-tree", "-r", commit+"^")
		for _, line := range strings.Split(lines, "\n") {
			meta, p, _ := strings.Cut(line, "\t")
			if f := strings.Fields(meta); len(f) == 3 && (st.onlyDir == "." && !strings.Contains(p, "/") || strings.HasPrefix(p, st.onlyDir+"/")) {
				mine[plumbing.NewHash(f[2])] = p
			}
		}
		for h := range seen {
			if _, ok := mine[h]; !ok {
				t.Errorf("%s: blob %s was read, which is not in %s", st.name, h, st.onlyDir)
			}
		}
		// Folders listed: those leading to the change, and the change's own.
		for _, d := range dirs {
			if !(d == st.onlyDir || strings.HasPrefix(d, st.onlyDir+"/") || d == "." || strings.HasPrefix(st.onlyDir, d+"/")) {
				t.Errorf("%s: folder %s was listed, which neither holds nor leads to %s", st.name, d, st.onlyDir)
			}
		}
		if len(seen) != st.reads {
			t.Errorf("%s: %d blobs read, want %d", st.name, len(seen), st.reads)
		}
	}
}

// sameCatalog fails unless got publishes exactly what want does: skills,
// files, directories, diagnostics, counts and id. File times are left
// out: a git file's time is that of the commit a snapshot first saw its
// blob in, so a file a reload kept carries an older commit's time than a
// cold build of the new commit gives every file.
func sameCatalog(t *testing.T, step string, got, want *catalog.Catalog) {
	t.Helper()
	if got.ID() != want.ID() {
		t.Errorf("%s: id %s, a cold build has %s", step, got.ID(), want.ID())
	}
	gs, ws := got.Stats(), want.Stats()
	gs.Hashed, gs.Reused, gs.Duration = 0, 0, 0
	ws.Hashed, ws.Reused, ws.Duration = 0, 0, 0
	if gs != ws {
		t.Errorf("%s: stats %+v, a cold build has %+v", step, gs, ws)
	}
	if g, w := skillList(got), skillList(want); g != w {
		t.Errorf("%s: skills differ from a cold build:\n%s\nwant\n%s", step, g, w)
	}
	for _, s := range want.Skills() {
		if g, w := normSkill(got.Skill(s.URI)), normSkill(s); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: skill %s:\n%+v\na cold build has\n%+v", step, s.URI, g, w)
		}
	}
	if g, w := diagList(got), diagList(want); g != w {
		t.Errorf("%s: diagnostics differ from a cold build:\n%s\nwant\n%s", step, g, w)
	}
	dirs := map[string]bool{}
	for _, c := range []*catalog.Catalog{got, want} {
		for _, s := range c.Skills() {
			for _, f := range s.Files {
				if c.File(f.URI) != f {
					t.Errorf("%s: %s is not served as the skill lists it", step, f.URI)
				}
				if g, w := normFile(got.File(f.URI)), normFile(want.File(f.URI)); g != w {
					t.Errorf("%s: file %s: %+v, a cold build has %+v", step, f.URI, g, w)
				}
				scheme, rest, _ := strings.Cut(f.URI, "://")
				for i := range len(rest) {
					if rest[i] == '/' {
						dirs[scheme+"://"+rest[:i]] = true
					}
				}
			}
		}
	}
	for _, uri := range slices.Sorted(maps.Keys(dirs)) {
		if g, w := normDir(got.Dir(uri)), normDir(want.Dir(uri)); g != w {
			t.Errorf("%s: directory %s:\n%s\na cold build has\n%s", step, uri, g, w)
		}
	}
}

func normFile(f *catalog.File) catalog.File {
	if f == nil {
		return catalog.File{}
	}
	n := *f
	n.ModTime = time.Time{}
	return n
}

type normalSkill struct {
	catalog.Skill
	files []catalog.File
}

func normSkill(s *catalog.Skill) *normalSkill {
	if s == nil {
		return nil
	}
	n := &normalSkill{Skill: *s}
	n.Files = nil
	for _, f := range s.Files {
		n.files = append(n.files, normFile(f))
	}
	return n
}

func normDir(d *catalog.Dir) string {
	if d == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", d.URI, d.Path)
	if d.Skill != nil {
		fmt.Fprintf(&b, " in %s", d.Skill.URI)
	}
	for _, c := range d.Children {
		fmt.Fprintf(&b, "\n  %s %s %+v", c.URI, c.Name, normFile(c.File))
	}
	return b.String()
}

func skillList(c *catalog.Catalog) string {
	var b strings.Builder
	for _, s := range c.Skills() {
		fmt.Fprintf(&b, "  %s %s %d files\n", s.URI, s.Dir, len(s.Files))
	}
	return b.String()
}

func diagList(c *catalog.Catalog) string {
	var b strings.Builder
	for _, d := range c.Diagnostics() {
		fmt.Fprintf(&b, "  %s %s %s %d:%d %s %v\n", d.Path, d.Skill, d.Rule, d.Line, d.Column, d.Message, d.Err)
	}
	return b.String()
}

// TestPackMemoryBound fetches a repository whose objects exceed the bound
// on what a fetched pack keeps in memory: the pack is indexed again from
// its file and the catalog is the same as one built within the bound, as
// is the catalog of a commit fetched next.
func TestPackMemoryBound(t *testing.T) {
	r := newRemote(t)
	files := map[string]string{}
	for i := range 30 {
		name := fmt.Sprintf("s%02d", i)
		files[name+"/SKILL.md"] = skillMD(name, "bounded")
		files[name+"/big.txt"] = strings.Repeat(name+" fills memory. ", 2000)
	}
	r.commit("start", files)
	r.push("main")
	within := mustOpen(t, "git+"+r.fileURL()+"@main", nil)

	defer gitsource.SetMaxPackMemory(64 << 10)()
	over := mustOpen(t, "git+"+r.fileURL()+"@main", nil)
	sameCatalog(t, "over the bound", over.Catalog(), within.Catalog())
	if got := over.Catalog().Stats().Skills; got != 30 {
		t.Fatalf("%d skills over the bound, want 30", got)
	}

	r.commit("next", map[string]string{"s00/big.txt": strings.Repeat("changed. ", 50000)})
	r.push("main")
	a, _, err := within.Update(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := over.Update(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sameCatalog(t, "a commit over the bound", b, a)
	f := b.File("skill://s00/big.txt")
	data, err := b.ReadFile(f)
	if err != nil || string(data) != strings.Repeat("changed. ", 50000) {
		t.Fatalf("the changed file over the bound: %d bytes, %v", len(data), err)
	}
}

// TestUpdateRequests counts what an update of a named branch asks of the
// remote: with nothing new, one request (the refs); with a new commit, two
// (the refs and the pack), not a separate listing before the fetch.
func TestUpdateRequests(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{"a/SKILL.md": skillMD("a", "one")})
	r.push("main")
	srv := serveHTTPGit(t, r.root, "", "")
	s := mustOpen(t, "git+"+srv.URL+"/repo.git@main", nil)
	for _, st := range []struct {
		name  string
		moved bool
		want  int
	}{
		{"nothing new", false, 1},
		{"a new commit", true, 2},
		{"nothing new again", false, 1},
	} {
		if st.moved {
			r.commit(st.name, map[string]string{"a/SKILL.md": skillMD("a", st.name)})
			r.push("main")
		}
		before := srv.Requests()
		_, changed, err := s.Update(context.Background())
		if err != nil || changed != st.moved {
			t.Fatalf("%s: changed %v, %v", st.name, changed, err)
		}
		if got := srv.Requests() - before; got != st.want {
			t.Errorf("%s: %d requests to the remote, want %d", st.name, got, st.want)
		}
	}
}
