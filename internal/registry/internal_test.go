package registry

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
)

// TestCacheBound fills the content cache past its bound: it never holds
// more than the bound, keeps the most recently used, and refuses content
// larger than the bound.
func TestCacheBound(t *testing.T) {
	c := newCache(1000)
	for i := range 50 {
		c.add(fmt.Sprint(i), bytes.Repeat([]byte{'x'}, 100))
		c.get("0") // keep 0 in use
		if _, n := c.size(); n > 1000 {
			t.Fatalf("after %d entries the cache holds %d bytes, bound 1000", i+1, n)
		}
	}
	if n, b := c.size(); n != 10 || b != 1000 {
		t.Errorf("cache holds %d entries, %d bytes; want 10, 1000", n, b)
	}
	if _, ok := c.get("0"); !ok {
		t.Error("the most recently used entry was evicted")
	}
	if _, ok := c.get("1"); ok {
		t.Error("an old entry was kept")
	}
	c.add("big", make([]byte, 1001))
	if _, ok := c.get("big"); ok {
		t.Error("content larger than the bound was cached")
	}
}

// FuzzIndexSkill: a manifest read from the database never crashes a
// replica; it is indexed, and its files published, or refused with an
// error.
func FuzzIndexSkill(f *testing.F) {
	f.Add([]byte(`{"frontmatter":{"name":"a","description":"d"},"files":[{"p":"SKILL.md","n":"SKILL.md","d":"sha256:00","s":3,"m":"text/markdown","t":true},{"p":"x/y/z.md","n":"z.md","d":"sha256:01","s":1}]}`))
	f.Add([]byte(`{"frontmatter":null,"files":[{"p":"","n":""},{"p":"/","n":"/"}]}`))
	f.Fuzz(func(t *testing.T, m []byte) {
		ix, err := indexSkill(row{path: "team/a", manifest: m})
		if err != nil {
			return
		}
		snap := published.NewSnapshot([]*catalog.Skill{ix.sk}, nil, nil)
		for _, f := range ix.sk.Files {
			if snap.File(f.URI) == nil {
				t.Errorf("%s is not published", f.URI)
			}
		}
	})
}

// TestSkillDigest: the digest a publish compares is the one stored with
// each version (manifest.digest), or every skill published before would
// look changed.
func TestSkillDigest(t *testing.T) {
	cat, err := catalog.OpenDir(filepath.Join("..", "..", "examples", "skills"), &catalog.Options{Prefix: "team"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Skills()) == 0 {
		t.Fatal("no example skills")
	}
	h := newDigester()
	for _, s := range cat.Skills() {
		if got, want := skillDigest(s, h), manifestOf(s).digest(); got != want {
			t.Errorf("%s: skillDigest %s, manifest digest %s", s.Path, got, want)
		}
	}
}

// TestReadAheadBound reads files ahead with a budget of 250 bytes: no more
// than the budget is read and not yet taken, a file larger than the whole
// budget is still read (alone), every file arrives once with its bytes,
// and stop ends the readers.
func TestReadAheadBound(t *testing.T) {
	// In a synctest bubble, synctest.Wait lets the readers run ahead as
	// far as they may before each check: every one of them is blocked.
	synctest.Test(t, testReadAheadBound)
}

func testReadAheadBound(t *testing.T) {
	fsys := fstest.MapFS{"s/SKILL.md": {Data: []byte("---\nname: s\ndescription: Many files.\n---\n")}}
	for i := range 40 {
		fsys[fmt.Sprintf("s/f%02d.txt", i)] = &fstest.MapFile{Data: bytes.Repeat([]byte{'a' + byte(i%26)}, 100)}
	}
	fsys["s/big.txt"] = &fstest.MapFile{Data: bytes.Repeat([]byte("b"), 1000)}
	cat, err := catalog.Open(fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	var files []fileRef
	for _, f := range cat.Skills()[0].Files {
		files = append(files, fileRef{cat: cat, f: f})
	}
	const budget = 250
	rd := readAhead(files, budget)
	got := map[string]bool{}
	for {
		synctest.Wait() // the readers have run ahead as far as they may
		// The files are 100 bytes but for SKILL.md (40) and one of 1,000
		// (which takes the whole budget): three fit in it at most.
		if n := len(rd.out); n > 3 {
			t.Fatalf("%d files read ahead, over the budget of %d bytes", n, budget)
		}
		r, ok := rd.next()
		if !ok {
			break
		}
		want, _ := fs.ReadFile(fsys, r.f.Path)
		if r.err != nil || !bytes.Equal(r.data, want) || got[r.f.Path] {
			t.Fatalf("%s: %d bytes, %v, seen before %v", r.f.Path, len(r.data), r.err, got[r.f.Path])
		}
		got[r.f.Path] = true
	}
	if len(got) != len(files) {
		t.Fatalf("%d files read, want %d", len(got), len(files))
	}

	rd = readAhead(files, budget)
	rd.next()
	rd.stop()
	done := make(chan struct{})
	go func() {
		for range rd.out {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the readers did not stop")
	}
}
