package catalog

import (
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"testing"
	"testing/fstest"
)

// TestPlainSegment holds plainSegment to what it stands for: a name that
// prefixSegment and escapeSegment leave as it is.
func TestPlainSegment(t *testing.T) {
	for _, name := range []string{"pdf", "a-b.c_d~e", "ComposioHQ", "user@x", "---", "ja-JP", "ü", "", "a b", "x%41"} {
		if plainSegment(name) && (prefixSegment(name, true) != name || prefixSegment(name, false) != name) {
			t.Errorf("%q is called plain but maps to %q / %q", name, prefixSegment(name, true), prefixSegment(name, false))
		}
		if !plainSegment(name) && name != "" && prefixSegment(name, true) == name && escapeSegment(name) == name {
			t.Errorf("%q maps to itself but is not called plain", name)
		}
	}
}

type cid string

func (c cid) ContentID() string { return string(c) }

// TestReloadChanged splices changed folders into a catalog of a
// content-addressed tree: the result publishes what a fresh build of the
// new tree publishes (skills, files, directories, diagnostics, id),
// including where the splice must give way to a full build (a collision,
// a skill at the root) and for paths that name no folder.
func TestReloadChanged(t *testing.T) {
	md := func(name string) *fstest.MapFile {
		data := "---\nname: " + name + "\ndescription: d\n---\n"
		return &fstest.MapFile{Data: []byte(data), Sys: cid(fmt.Sprintf("%x", sha256.Sum256([]byte(data))))}
	}
	file := func(data string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(data), Sys: cid(fmt.Sprintf("%x", sha256.Sum256([]byte(data))))}
	}
	base := fstest.MapFS{
		"a/SKILL.md":      md("a"),
		"a/ref.md":        file("ref"),
		"team/b/SKILL.md": md("b"),
		"team/c/SKILL.md": md("c"),
		"Docs/guide.md":   file("guide"),
		"oldbad/SKILL.md": file("---\nname: bad\n---\nno description\n"),
	}
	for _, tc := range []struct {
		name    string
		edit    map[string]*fstest.MapFile // nil deletes
		changed []string
	}{
		{"a file of a skill", map[string]*fstest.MapFile{"a/ref.md": file("ref 2")}, []string{"a"}},
		{"a skill added", map[string]*fstest.MapFile{"team/d/SKILL.md": md("d")}, []string{"team/d"}},
		{"a skill removed", map[string]*fstest.MapFile{"team/b/SKILL.md": nil}, []string{"team/b"}},
		{"a folder mapping onto another", map[string]*fstest.MapFile{"docs/e/SKILL.md": md("e")}, []string{"docs"}},
		{"a skill named like its neighbour", map[string]*fstest.MapFile{"f/SKILL.md": md("a")}, []string{"f"}},
		{"a skill named like its neighbour in a level", map[string]*fstest.MapFile{"team/g/SKILL.md": md("b")}, []string{"team/g"}},
		{"a skill named like a refused neighbour", map[string]*fstest.MapFile{"h/SKILL.md": md("bad")}, []string{"h"}},
		{"a skill at the root", map[string]*fstest.MapFile{"SKILL.md": md("root")}, []string{"SKILL.md"}},
		{"the root itself", map[string]*fstest.MapFile{"a/ref.md": file("ref 3")}, []string{"."}},
		{"paths that are no folder", map[string]*fstest.MapFile{"a/ref.md": file("ref 4")}, []string{"a", "../x", "a/ref.md/.."}},
	} {
		next := maps.Clone(base)
		for p, f := range tc.edit {
			if f == nil {
				delete(next, p)
			} else {
				next[p] = f
			}
		}
		o := &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		prev, err := Open(base, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := prev.ReloadChanged(next, tc.changed)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, err := Open(next, o)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID() != want.ID() || fmt.Sprint(got.Diagnostics()) != fmt.Sprint(want.Diagnostics()) {
			t.Errorf("%s: id %s, diagnostics %v; a fresh build has %s, %v", tc.name, got.ID(), got.Diagnostics(), want.ID(), want.Diagnostics())
		}
		gs, ws := got.Stats(), want.Stats()
		gs.Hashed, gs.Reused, gs.Duration, ws.Hashed, ws.Reused, ws.Duration = 0, 0, 0, 0, 0, 0
		if gs != ws {
			t.Errorf("%s: stats %+v, a fresh build has %+v", tc.name, gs, ws)
		}
		if len(got.dirs) != len(want.dirs) {
			t.Errorf("%s: %d directories, a fresh build has %d", tc.name, len(got.dirs), len(want.dirs))
		}
		for uri, d := range want.dirs {
			if g, w := dirString(got.dirs[uri]), dirString(d); g != w {
				t.Errorf("%s: directory %s: %s, a fresh build has %s", tc.name, uri, g, w)
			}
		}
	}
}

func dirString(d *Dir) string {
	if d == nil {
		return "<nil>"
	}
	s := d.URI + " " + d.Path
	if d.Skill != nil {
		s += " in " + d.Skill.URI
	}
	for _, c := range d.Children {
		s += " " + c.URI + "=" + c.Name
		if c.File != nil {
			s += ":" + c.File.URI + ":" + c.File.Digest
		}
	}
	return s
}
