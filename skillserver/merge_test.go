package skillserver_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

func mapCatalog(t *testing.T, prefix string, files map[string]string) *catalog.Catalog {
	t.Helper()
	m := fstest.MapFS{}
	for p, c := range files {
		m[p] = &fstest.MapFile{Data: []byte(c)}
	}
	c, err := catalog.Open(m, &catalog.Options{Prefix: prefix, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMergeConflictNamesBothSources(t *testing.T) {
	a := published.NewCatalogSource(mapCatalog(t, "", map[string]string{"pdf/SKILL.md": skillMD("pdf", "from a")}))
	b := published.NewCatalogSource(mapCatalog(t, "", map[string]string{"pdf/SKILL.md": skillMD("pdf", "from b")}))
	_, err := published.Merge([]published.MergePart{{Name: "./team-a", Source: a}, {Name: "git+https://example.com/b.git", Source: b}}, discard)
	if !errors.Is(err, published.ErrConflict) || !strings.Contains(err.Error(), "./team-a") || !strings.Contains(err.Error(), "git+https://example.com/b.git") || !strings.Contains(err.Error(), `"pdf"`) {
		t.Fatalf("Merge of two sources publishing pdf: %v; want ErrConflict naming the path and both sources", err)
	}
	// A skill inside another source's skill would change that skill's file set.
	c := published.NewCatalogSource(mapCatalog(t, "pdf", map[string]string{"forms/SKILL.md": skillMD("forms", "nested")}))
	if _, err := published.Merge([]published.MergePart{{Name: "a", Source: a}, {Name: "c", Source: c}}, discard); !errors.Is(err, published.ErrConflict) {
		t.Errorf("a skill nested in another source's skill: %v, want ErrConflict", err)
	}
}

func TestMergeServesUnionAndFollowsChanges(t *testing.T) {
	a := published.NewCatalogSource(mapCatalog(t, "acme", map[string]string{"pdf/SKILL.md": skillMD("pdf", "a"), "pdf/references/GUIDE.md": "guide"}))
	b := published.NewCatalogSource(mapCatalog(t, "acme", map[string]string{"csv/SKILL.md": skillMD("csv", "b")}))
	m, err := published.Merge([]published.MergePart{{Name: "a", Source: a}, {Name: "b", Source: b}}, discard)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, _, err := skillserver.New(nil, m, &skillserver.Options{Logger: discard, TTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := connectRaw(t, s, "")
	var uris []string
	for _, sk := range get[wire.ListSkillsResult](c, "skills/list", map[string]any{}).Skills {
		uris = append(uris, sk.URI)
	}
	if want := []string{"skill://acme/csv/SKILL.md", "skill://acme/pdf/SKILL.md"}; !slices.Equal(uris, want) {
		t.Fatalf("skills/list = %v, want %v", uris, want)
	}
	// The prefix level both sources share lists both children.
	var names []string
	for _, e := range get[wire.ReadDirectoryResult](c, "resources/directory/read", map[string]any{"uri": "skill://acme"}).Resources {
		names = append(names, e.URI)
	}
	if want := []string{"skill://acme/csv", "skill://acme/pdf"}; !slices.Equal(names, want) {
		t.Errorf("directory read of the shared prefix = %v, want %v", names, want)
	}
	type readResult struct {
		Contents []struct{ Text string } `json:"contents"`
	}
	if r := get[readResult](c, "resources/read", map[string]any{"uri": "skill://acme/pdf/references/GUIDE.md"}); len(r.Contents) != 1 || r.Contents[0].Text != "guide" {
		t.Errorf("resources/read through the merge = %+v", r)
	}

	// A part changes: a new merged snapshot and list_changed.
	old := m.Snapshot().ID()
	b.Swap(mapCatalog(t, "acme", map[string]string{"csv/SKILL.md": skillMD("csv", "b, v2")}))
	c.waitNote("notifications/resources/list_changed", 5*time.Second)
	if m.Snapshot().ID() == old {
		t.Error("the merged snapshot id did not change")
	}
	// A change into a conflict keeps the previous merged snapshot.
	cur := m.Snapshot()
	b.Swap(mapCatalog(t, "acme", map[string]string{"pdf/SKILL.md": skillMD("pdf", "b takes pdf")}))
	if m.Snapshot() != cur {
		t.Error("a conflicting change replaced the merged snapshot")
	}
}

// TestMergeRefreshesTheChangedPart edits a file of one part behind the
// server's back: the read finds it changed, the merged source refreshes
// that part, and the new bytes are served under their new digest.
func TestMergeRefreshesTheChangedPart(t *testing.T) {
	dirA := writeTree(t, t.TempDir(), map[string]string{"pdf/SKILL.md": skillMD("pdf", "a"), "pdf/notes.md": "old"})
	dirB := writeTree(t, t.TempDir(), map[string]string{"csv/SKILL.md": skillMD("csv", "b")})
	open := func(dir string) *published.CatalogSource {
		c, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		return published.NewCatalogSource(c)
	}
	a, b := open(dirA), open(dirB)
	m, err := published.Merge([]published.MergePart{{Name: dirA, Source: a}, {Name: dirB, Source: b}}, discard)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := skillserver.New(nil, m, &skillserver.Options{Logger: discard, TTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := connectRaw(t, s, "")
	writeTree(t, dirA, map[string]string{"pdf/notes.md": "new!"})
	type readResult struct {
		Contents []struct{ Text string } `json:"contents"`
	}
	bOld := b.Catalog()
	if r := get[readResult](c, "resources/read", map[string]any{"uri": "skill://pdf/notes.md"}); len(r.Contents) != 1 || r.Contents[0].Text != "new!" {
		t.Errorf("read after the edit = %+v, want the new bytes", r)
	}
	if b.Catalog() != bOld {
		t.Error("the unchanged part was rebuilt too")
	}
}
