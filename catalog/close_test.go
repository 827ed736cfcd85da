package catalog_test

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/skillport/skillport/catalog"
)

func TestCloseReleasesTheDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "SKILL.md"), []byte("---\nname: a\ndescription: A.\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	next, err := cat.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Close(); err != nil {
		t.Fatal(err)
	}
	// Snapshots share the handle: closing one closes the tree for all.
	if _, err := next.ReadFile(next.File("skill://a/SKILL.md")); err == nil {
		t.Fatal("a reloaded snapshot still reads after Close")
	}
	if _, err := next.Reload(); err == nil {
		t.Fatal("Reload succeeded after Close")
	}
	if err := next.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	mem, err := catalog.Open(fstest.MapFS{"b/SKILL.md": {Data: []byte("---\nname: b\ndescription: B.\n---\n")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.ReadFile(mem.File("skill://b/SKILL.md")); err != nil {
		t.Fatalf("Close of an fs.FS catalog broke it: %v", err)
	}
}
