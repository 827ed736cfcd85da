package registry

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/skillport/skillport/catalog"
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
// replica; it is indexed or refused with an error.
func FuzzIndexSkill(f *testing.F) {
	f.Add([]byte(`{"frontmatter":{"name":"a","description":"d"},"files":[{"p":"SKILL.md","n":"SKILL.md","d":"sha256:00","s":3,"m":"text/markdown","t":true},{"p":"x/y/z.md","n":"z.md","d":"sha256:01","s":1}]}`))
	f.Add([]byte(`{"frontmatter":null,"files":[{"p":"","n":""},{"p":"/","n":"/"}]}`))
	f.Fuzz(func(t *testing.T, m []byte) {
		ix, err := indexSkill(row{path: "team/a", manifest: m})
		if err != nil {
			return
		}
		if ix.dirs[ix.sk.Root] == nil {
			t.Errorf("no root directory for %s", ix.sk.Root)
		}
	})
}

// TestSkillDigest: the digest a publish compares is the one stored with
// each version (manifest.digest), or every skill published before would
// look changed.
func TestSkillDigest(t *testing.T) {
	cat, err := catalog.OpenDir(filepath.Join("..", "examples", "skills"), &catalog.Options{Prefix: "team"})
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
