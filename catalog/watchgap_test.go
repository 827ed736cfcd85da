package catalog_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
)

// A change made after the catalog was built but before Watch started
// raises no event; Watch still delivers it, without waiting for another.
func TestWatchCatchesChangesBeforeItStarted(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "a", "SKILL.md"), "---\nname: a\ndescription: A.\n---\n")
	cat, err := catalog.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	write(filepath.Join(dir, "b", "SKILL.md"), "---\nname: b\ndescription: B.\n---\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan *catalog.Catalog, 1)
	go catalog.Watch(ctx, cat, &catalog.WatchOptions{Debounce: 10 * time.Millisecond}, func(c *catalog.Catalog) {
		select {
		case got <- c:
		default:
		}
	})
	select {
	case c := <-got:
		if len(c.Skills()) != 2 {
			t.Fatalf("delivered %d skills, want 2", len(c.Skills()))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the change made before Watch started was never delivered")
	}
}
