//go:build unix

package catalog

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/skilltest"
)

// A named pipe in a skill is a special file: it is reported and skipped,
// never opened (opening one would block the build). Windows file systems
// hold no named pipes, so the test exists on Unix only.
func TestSpecialFilesSkipped(t *testing.T) {
	dir := skilltest.WriteTree(t, map[string]string{"a/SKILL.md": md("a", "d")})
	if err := mkfifo(filepath.Join(dir, "a", "pipe")); err != nil {
		t.Fatal(err)
	}
	done := make(chan *Catalog)
	go func() {
		c, _ := OpenDir(dir, &Options{Logger: quiet})
		done <- c
	}()
	select {
	case c := <-done:
		if got := uris(c); !slices.Equal(got, []string{"skill://a/SKILL.md"}) || len(c.Skill("skill://a/SKILL.md").Files) != 1 {
			t.Errorf("published %v", got)
		}
		if got := diagRules(c); !slices.Equal(got, []string{"a/pipe:special-file"}) {
			t.Errorf("diagnostics %v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("building the catalog hung on a FIFO")
	}
}

// The portable walk skips special files too.
func TestSpecialFilesSkippedPortableWalk(t *testing.T) {
	useFDWalk = false
	defer func() { useFDWalk = fdWalkSupported }()
	TestSpecialFilesSkipped(t)
}
