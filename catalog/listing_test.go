package catalog

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestListingRoundTrip checks that a packed listing gives back the names,
// types and infos of the entries it was made from, in order.
func TestListingRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"b-dir", "sub/x"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"SKILL.md", "a.txt", "sub/x/deep.md", "ünïcode ✓.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, p := range []string{".", "sub", "sub/x"} {
		want, err := fs.ReadDir(root.FS(), p)
		if err != nil {
			t.Fatal(err)
		}
		stamp := dirStamp{ino: 7, mtime: 1}
		l := newListing(stamp, want)
		if l.stamp != stamp || l.len() != len(want) {
			t.Fatalf("%s: listing of %d entries, stamp %v; want %d, %v", p, l.len(), l.stamp, len(want), stamp)
		}
		got := l.dirEntries(root, p)
		for i, w := range want {
			g := got[i]
			if g.Name() != w.Name() || l.name(i) != w.Name() || g.Type() != w.Type() || l.typ(i) != w.Type() || g.IsDir() != w.IsDir() {
				t.Errorf("%s: entry %d = %q %v, want %q %v", p, i, g.Name(), g.Type(), w.Name(), w.Type())
			}
			gi, err := g.Info()
			if err != nil {
				t.Fatalf("%s: Info of %s: %v", p, g.Name(), err)
			}
			wi, _ := w.Info()
			if gi.Name() != wi.Name() || gi.Mode() != wi.Mode() || gi.Size() != wi.Size() {
				t.Errorf("%s: Info of %s = %v %d, want %v %d", p, g.Name(), gi.Mode(), gi.Size(), wi.Mode(), wi.Size())
			}
		}
	}
	if l := newListing(dirStamp{}, nil); l.len() != 0 || len(l.dirEntries(root, ".")) != 0 {
		t.Errorf("empty listing has %d entries", l.len())
	}
}

// TestListingKeptSmall checks what a kept listing costs: its names once
// and a fixed few bytes per entry, not an object per entry.
func TestListingKeptSmall(t *testing.T) {
	dir := t.TempDir()
	var names []string
	for i := range 200 {
		name := filepath.Join(dir, "file-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		names = append(names, filepath.Base(name))
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var l *listing
	allocs := testing.AllocsPerRun(10, func() { l = newListing(dirStamp{}, entries) })
	if allocs > 3 {
		t.Errorf("packing 200 entries took %v allocations, want at most 3", allocs)
	}
	slices.Sort(names)
	for i, n := range names {
		if l.name(i) != n {
			t.Fatalf("entry %d = %q, want %q", i, l.name(i), n)
		}
	}
}
