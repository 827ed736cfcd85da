package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/skillport/skillport/internal/skilltest"
)

// writeVersion makes a complete skill folder inside a fresh staging folder
// beside target, as install does, and returns it; the staging folder is
// closed with the test.
func writeVersion(t *testing.T, target string, files map[string]string) string {
	t.Helper()
	st, err := NewStaging(filepath.Dir(target), StagePrefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dir := filepath.Join(st.Dir, filepath.Base(target))
	skilltest.WriteFiles(t, dir, files)
	return dir
}

func digestOf(files map[string]string) string {
	var fs []File
	for p, c := range files {
		fs = append(fs, FileOf(p, []byte(c)))
	}
	return TreeDigest(fs)
}

// TestPlaceIsOneStep: while the skill folder is replaced again and again,
// its path always names a complete folder: a reader finds the folder
// every time, and a walk during which the folder was not replaced sees
// the old skill or the new one, whole, never a mixture or half a folder.
// (A walk that a replacement overtook may see the old folder being
// deleted under it; it is counted out, by the folder's identity.)
func TestPlaceIsOneStep(t *testing.T) {
	target := filepath.Join(t.TempDir(), "skills", "hello")
	v1 := map[string]string{"SKILL.md": "one", "a/x.md": "1", "a/y.md": "11"}
	v2 := map[string]string{"SKILL.md": "two", "b/z.md": "2"}
	first := writeVersion(t, target, v1)
	if err := Place(first, target); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Dir(first))
	ok := map[string]bool{digestOf(v1): true, digestOf(v2): true}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Value
	var seen atomic.Int32
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			// The open folder is held through the walk, so its inode number
			// cannot pass to a folder staged meanwhile (Place deletes the
			// version it replaced at once): the same inode after the walk
			// means the walk read one version, all of it.
			held, err := os.Open(target)
			if err != nil {
				bad.Store(err.Error())
				return
			}
			before, err := held.Stat()
			if err != nil {
				held.Close()
				bad.Store(err.Error())
				return
			}
			files, odd, err := ReadTree(target)
			after, serr := os.Stat(target)
			held.Close()
			if serr != nil {
				bad.Store(serr.Error())
				return
			}
			if !os.SameFile(before, after) {
				continue
			}
			if err != nil || len(odd) > 0 || !ok[TreeDigest(files)] {
				bad.Store(fmt.Sprint(files, odd, err))
				return
			}
			seen.Add(1)
		}
	}()
	for i := range 200 {
		v := v1
		if i%2 == 0 {
			v = v2
		}
		stage := writeVersion(t, target, v)
		if err := Place(stage, target); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Dir(stage))
	}
	stop.Store(true)
	wg.Wait()
	if b := bad.Load(); b != nil {
		t.Errorf("a reader saw a folder that is neither version: %v", b)
	}
	if seen.Load() == 0 {
		t.Error("the reader never completed a walk")
	}
	ents, _ := os.ReadDir(filepath.Dir(target))
	if len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestAcquireExcludes: holders of the install lock never overlap.
func TestAcquireExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cfg", LockName)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				release, err := Acquire(path)
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				os.WriteFile(path, []byte(strings.Repeat("x", 100)), 0o644) // work while holding it
				inside.Add(-1)
				release()
			}
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d holders at once", most.Load())
	}
}

// TestReadTreeBounds: a folder with more entries than the bound, or nested
// deeper, is refused with ErrTooMany naming the bound, and one just inside
// both is read; a link is reported, never followed.
func TestReadTreeBounds(t *testing.T) {
	files := map[string]string{"SKILL.md": "x", "a/b.md": "y"}
	for i := range 8 {
		files[fmt.Sprintf("ref/f%d.md", i)] = "z"
	}
	dir := skilltest.WriteTree(t, files)
	// SKILL.md, a, a/b.md, ref and its 8 files: 12 entries.
	if got, _, err := readTree(dir, 12, 1); err != nil || len(got) != 10 {
		t.Errorf("12 entries at depth 1: %d files, %v", len(got), err)
	}
	if _, _, err := readTree(dir, 11, 1); !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "more than 11") {
		t.Errorf("12 entries, bound 11: %v", err)
	}
	deep := skilltest.WriteTree(t, map[string]string{strings.Repeat("d/", MaxTreeDepth+1) + "x.md": "x"})
	if _, _, err := ReadTree(deep); !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), fmt.Sprintf("deeper than %d", MaxTreeDepth)) {
		t.Errorf("%d folders deep: %v", MaxTreeDepth+1, err)
	}
	ok := skilltest.WriteTree(t, map[string]string{strings.Repeat("d/", MaxTreeDepth) + "x.md": "x"})
	if got, _, err := ReadTree(ok); err != nil || len(got) != 1 {
		t.Errorf("%d folders deep: %v %v", MaxTreeDepth, got, err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if got, odd, err := ReadTree(dir); err != nil || len(got) != 10 || len(odd) != 1 || odd[0] != "a/link" {
		t.Errorf("with a link: %d files, odd %v, %v", len(got), odd, err)
	}
}
