package skilltest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteTree(t *testing.T) {
	dir := WriteTree(t, map[string]string{"a/SKILL.md": "---\nname: a\n---\n", "a/scripts/x.sh": "echo\n", "top.txt": "t"})
	for p, want := range map[string]string{"a/SKILL.md": "---\nname: a\n---\n", "a/scripts/x.sh": "echo\n", "top.txt": "t"} {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", p, got, err, want)
		}
	}
}

// The same tree gives the same key (so the test processes of a run share
// one build), and the build environment is part of it.
func TestSourceKey(t *testing.T) {
	a, err := sourceKey(Root())
	if err != nil {
		t.Fatal(err)
	}
	b, err := sourceKey(Root())
	if err != nil || a != b {
		t.Fatalf("two keys of one tree: %s, %s (%v)", a, b, err)
	}
	t.Setenv("GOFLAGS", "-tags=skilltest_other")
	c, err := sourceKey(Root())
	if err != nil || c == a {
		t.Fatalf("GOFLAGS changed, key did not: %s (%v)", c, err)
	}
}
