package published_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
)

func md(name string) []byte {
	return []byte("---\nname: " + name + "\ndescription: The " + name + " skill.\n---\n# " + name + "\n")
}

// TestCatalogSourceSnapshot checks that the snapshot the builder makes of
// a catalog, from the catalog's own maps, publishes what a snapshot built
// from the skills alone does: each file once (a nested skill's files are
// its parent's too), directories and reads, with the catalog's ID.
func TestCatalogSourceSnapshot(t *testing.T) {
	fsys := fstest.MapFS{
		"a/SKILL.md":      {Data: md("a")},
		"a/ref.md":        {Data: []byte("r")},
		"a/b/SKILL.md":    {Data: md("b")},
		"a/b/x/deep.md":   {Data: []byte("d")},
		"team/c/SKILL.md": {Data: md("c")},
	}
	cat, err := catalog.Open(fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, packed := range []bool{false, true} {
		c := cat
		if packed {
			c = cat.Pack()
		}
		src := published.NewCatalogSource(c)
		snap := src.Snapshot()
		plain := published.NewSnapshot(c.Skills(), nil, nil)
		uris := func(fs []*catalog.File) []string {
			var out []string
			for _, f := range fs {
				out = append(out, f.URI)
			}
			return out
		}
		if got, want := uris(snap.Files()), uris(plain.Files()); !slices.Equal(got, want) || len(got) != 5 {
			t.Errorf("packed %v: files %q, want %q (5, each once)", packed, got, want)
		}
		if snap.ID() != c.ID() {
			t.Errorf("packed %v: ID %s, want the catalog's %s", packed, snap.ID(), c.ID())
		}
		for _, uri := range []string{"skill://a", "skill://a/b/x", "skill://team"} {
			if snap.Dir(uri) == nil || plain.Dir(uri) == nil {
				t.Errorf("packed %v: directory %s missing", packed, uri)
			}
		}
		f := snap.File("skill://a/b/x/deep.md")
		if b, err := snap.ReadFile(context.Background(), f); err != nil || string(b) != "d" {
			t.Errorf("packed %v: read %q, %v", packed, b, err)
		}
		// Through the SkillSource methods every Source has.
		skills, err := src.ListSkills(context.Background())
		if err != nil || len(skills) != 3 {
			t.Fatalf("packed %v: ListSkills: %d skills, %v", packed, len(skills), err)
		}
		if b, err := src.ReadFile(context.Background(), f); err != nil || string(b) != "d" {
			t.Errorf("packed %v: Source.ReadFile %q, %v", packed, b, err)
		}
		stale := *f
		stale.Digest = "sha256:" + string(make([]byte, 64))
		if _, err := src.ReadFile(context.Background(), &stale); !errors.Is(err, catalog.ErrChanged) {
			t.Errorf("packed %v: reading a file listed with another digest: %v, want ErrChanged", packed, err)
		}
		if _, err := snap.ReadFile(context.Background(), &stale); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("packed %v: reading a file not of the snapshot: %v, want ErrNotFound", packed, err)
		}
	}
}
