package install

import (
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/skillport/skillport/internal/skilltest"
)

// TestReadTreeFIFO: a FIFO put in an installed folder (which a blocking
// open would wait on forever) is reported as not a regular file, at once,
// next to a link, and the files around them are still read.
func TestReadTreeFIFO(t *testing.T) {
	dir := skilltest.WriteTree(t, map[string]string{"SKILL.md": "x", "ref/a.md": "a"})
	if err := unix.Mkfifo(filepath.Join(dir, "ref", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Symlink("a.md", filepath.Join(dir, "ref", "b.md")); err != nil {
		t.Fatal(err)
	}
	files, odd, err := ReadTree(dir)
	if err != nil || len(files) != 2 || !slices.Equal(odd, []string{"ref/b.md", "ref/pipe"}) {
		t.Errorf("ReadTree = %v, odd %v, %v", files, odd, err)
	}
}
