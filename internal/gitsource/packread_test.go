package gitsource_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/gitsource"
)

// TestWarmStartReadsDeltas restarts on a mirror whose pack holds chains
// of deltas (as packs from real servers do), without the digests kept
// beside it, so that every tree and blob is read again from the pack: the
// catalog is the one the cold start built, file for file.
func TestWarmStartReadsDeltas(t *testing.T) {
	r := newRemote(t)
	lines := make([]string, 150)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of a reference that changes a little in each commit", i)
	}
	for c := range 25 {
		lines[(c*11)%len(lines)] = fmt.Sprintf("changed in commit %d", c)
		files := map[string]string{}
		for _, s := range []string{"a", "b", "c"} {
			files[s+"/SKILL.md"] = skillMD(s, fmt.Sprintf("skill %s at commit %d", s, c)) + strings.Join(lines, "\n")
			files[s+"/references/ref.md"] = s + "\n" + strings.Join(lines, "\n")
		}
		r.commit(fmt.Sprint(c), files)
	}
	r.push("main")
	git(t, r.bare, "repack", "-q", "-a", "-d", "-f", "--window=50", "--depth=30")
	srv := serveHTTPGit(t, r.root, "", "")
	cache := t.TempDir()
	spec := "git+" + srv.URL + "/repo.git@main"
	cold := mustOpen(t, spec, &gitsource.Options{CacheDir: cache})

	packs, _ := filepath.Glob(filepath.Join(cache, "*.git", "objects", "pack", "*.idx"))
	if len(packs) != 1 {
		t.Fatalf("mirror packs %v", packs)
	}
	deltas := 0
	for _, line := range strings.Split(git(t, r.root, "verify-pack", "-v", packs[0]), "\n") {
		if f := strings.Fields(line); len(f) == 7 && len(f[0]) == 40 {
			deltas++
		}
	}
	if deltas < 20 {
		t.Fatalf("the mirror's pack holds %d deltas: nothing to test", deltas)
	}
	digests, _ := filepath.Glob(filepath.Join(cache, "*.git", "skillport-digests"))
	for _, d := range digests {
		os.Remove(d)
	}
	warm := mustOpen(t, spec, &gitsource.Options{CacheDir: cache})
	if st := warm.Catalog().Stats(); st.Hashed != 6 || st.Reused != 0 {
		t.Errorf("warm start without kept digests hashed %d and reused %d files, want all 6 hashed", st.Hashed, st.Reused)
	}
	sameCatalog(t, "warm start from deltas", warm.Catalog(), cold.Catalog())
	for _, s := range []string{"a", "b", "c"} {
		want := git(t, r.work, "show", "main:"+s+"/references/ref.md")
		if got := body(t, warm.Catalog(), "skill://"+s+"/references/ref.md"); strings.TrimSpace(got) != want {
			t.Errorf("%s/references/ref.md: served %q, git has %q", s, got, want)
		}
	}
}

// TestReloadKeepsNewDigests reloads a commit that changes one skill's
// file in a nested folder: its new digest is kept beside the mirror (the
// save after a reload looks only at the folders rebuilt), so a restart
// reads only the SKILL.md files again.
func TestReloadKeepsNewDigests(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{
		"team/a/SKILL.md": skillMD("a", "a"), "team/a/ref.md": "reference a",
		"b/SKILL.md": skillMD("b", "b"), "b/ref.md": "reference b",
	})
	r.push("main")
	cache := t.TempDir()
	spec := "git+" + r.fileURL() + "@main"
	s := mustOpen(t, spec, &gitsource.Options{CacheDir: cache})
	r.commit("two", map[string]string{"team/a/ref.md": "reference a, changed"})
	r.push("main")
	if _, changed, err := s.Update(context.Background()); err != nil || !changed {
		t.Fatalf("Update: %v, %v", changed, err)
	}
	// The reload saves in the background: wait for the new blob's line.
	blob := git(t, r.work, "rev-parse", "main:team/a/ref.md")
	files, _ := filepath.Glob(filepath.Join(cache, "*.git", "skillport-digests"))
	if len(files) != 1 {
		t.Fatalf("digests files %v", files)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(files[0])
		if strings.Contains(string(data), blob+" ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the changed file's blob %s is not in the digests kept after the reload:\n%s", blob, data)
		}
	}
	warm := mustOpen(t, spec, &gitsource.Options{CacheDir: cache})
	if st := warm.Catalog().Stats(); st.Hashed != 2 || st.Reused != 2 {
		t.Errorf("a restart after the reload hashed %d and reused %d files, want the 2 SKILL.md hashed and 2 reused", st.Hashed, st.Reused)
	}
}
