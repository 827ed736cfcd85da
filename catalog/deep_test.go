package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTooDeepFolderIsReported: a skill nested below the walk's depth bound
// is not published, and the folder where the walk stopped is reported,
// never silently dropped.
func TestTooDeepFolderIsReported(t *testing.T) {
	root := t.TempDir()
	deep := root
	for range DefaultMaxDepth*4 + 6 {
		deep = filepath.Join(deep, "d")
	}
	for dir, name := range map[string]string{filepath.Join(deep, "deep"): "deep", filepath.Join(root, "ok"): "ok"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: d\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := CheckDir(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range rep.Diagnostics {
		found = found || strings.Contains(d.Message, "nested more than 64 levels")
	}
	if rep.Stats.Skills != 1 || !found {
		t.Errorf("%d skills, diagnostics %+v", rep.Stats.Skills, rep.Diagnostics)
	}
	cat, err := OpenDir(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	found = false
	for _, d := range cat.Diagnostics() {
		found = found || strings.Contains(d.Message, "nested more than 64 levels")
	}
	if !found {
		t.Errorf("OpenDir: diagnostics %+v", cat.Diagnostics())
	}
}
