package install

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/skilltest"
)

// abandon makes a staging folder in parent with a skill half written in
// it, as a process killed while writing leaves it: the marker written,
// its lock released.
func abandon(t *testing.T, parent, prefix string) string {
	t.Helper()
	st, err := NewStaging(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write("hello", []string{"SKILL.md", "ref/a.md"}, [][]byte{[]byte("half"), []byte("a")}); err != nil {
		t.Fatal(err)
	}
	st.marker.Close()
	return st.Dir
}

// TestSweep: Sweep removes exactly the staging folders skillport made and
// no living process uses, puts back a folder left aside when nothing took
// its place, and leaves everything else alone: a folder in use, one
// without the marker or with another text in it, a marker that is a link,
// a link named like a staging folder, a skill folder. Abandoned lists the
// same folders without touching them.
func TestSweep(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "skills")
	old := time.Now().Add(-2 * abandonedUnmarked)

	removed := []string{
		abandon(t, parent, StagePrefix),
		abandon(t, parent, PullPrefix),
	}
	// Killed between making the folder and its marker, or between
	// creating the marker and writing it, a while ago.
	unmarked := filepath.Join(parent, PullPrefix+"unmarked")
	os.MkdirAll(unmarked, 0o755)
	os.Chtimes(unmarked, old, old)
	emptyMarker := filepath.Join(parent, StagePrefix+"empty-marker")
	skilltest.WriteFile(t, filepath.Join(emptyMarker, StageMarker), "")
	os.Chtimes(filepath.Join(emptyMarker, StageMarker), old, old)
	removed = append(removed, unmarked, emptyMarker)

	// A skill moved aside whose replacement never landed, and one whose
	// replacement did.
	asideGone := abandon(t, parent, StagePrefix)
	skilltest.WriteFiles(t, filepath.Join(asideGone, asideName, "gone"), map[string]string{"SKILL.md": "old"})
	asideHere := abandon(t, parent, StagePrefix)
	skilltest.WriteFiles(t, filepath.Join(asideHere, asideName, "here"), map[string]string{"SKILL.md": "older"})
	skilltest.WriteFiles(t, filepath.Join(parent, "here"), map[string]string{"SKILL.md": "new"})
	removed = append(removed, asideGone, asideHere)

	live, err := NewStaging(parent, PullPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	// Made a moment ago, its marker to come: with flock its maker finds it
	// gone and makes another, so it goes at once; without, it is kept.
	fresh := filepath.Join(parent, PullPrefix+"fresh")
	os.MkdirAll(fresh, 0o755)
	if canFlock {
		removed = append(removed, fresh)
	}
	noMarker := filepath.Join(parent, StagePrefix+"no-marker")
	skilltest.WriteFiles(t, noMarker, map[string]string{"SKILL.md": "someone else's"})
	otherText := filepath.Join(parent, StagePrefix+"other-text")
	skilltest.WriteFiles(t, otherText, map[string]string{StageMarker: "not ours\n", "data": "x"})
	linkMarker := filepath.Join(parent, StagePrefix+"link-marker")
	markerElsewhere := skilltest.WriteTree(t, map[string]string{"m": markerText})
	os.MkdirAll(linkMarker, 0o755)
	os.Symlink(filepath.Join(markerElsewhere, "m"), filepath.Join(linkMarker, StageMarker))
	elsewhere := abandon(t, t.TempDir(), StagePrefix)
	linked := filepath.Join(parent, StagePrefix+"link")
	os.Symlink(elsewhere, linked)
	skill := filepath.Join(parent, "hello")
	skilltest.WriteFiles(t, skill, map[string]string{"SKILL.md": "x", StageMarker: markerText})
	kept := []string{live.Dir, noMarker, otherText, linkMarker, linked, skill, elsewhere, filepath.Join(parent, "here")}

	slices.Sort(removed)
	listed, err := Abandoned(parent)
	if err != nil || !slices.Equal(listed, removed) {
		t.Errorf("Abandoned = %v, %v\nwant %v", listed, err, removed)
	}
	for _, p := range removed {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("Abandoned removed %s", p)
		}
	}

	swept, err := Sweep(parent)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(swept.Removed)
	if !slices.Equal(swept.Removed, removed) {
		t.Errorf("Sweep removed %v\nwant %v", swept.Removed, removed)
	}
	if want := []string{filepath.Join(parent, "gone")}; !slices.Equal(swept.Restored, want) {
		t.Errorf("Sweep put back %v, want %v", swept.Restored, want)
	}
	for _, p := range removed {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	if !canFlock {
		kept = append(kept, fresh)
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("Sweep took %s: %v", p, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(parent, "gone", "SKILL.md")); string(got) != "old" {
		t.Errorf("put back %q, want the old skill", got)
	}
	if got, _ := os.ReadFile(filepath.Join(parent, "here", "SKILL.md")); string(got) != "new" {
		t.Errorf("the skill in place became %q", got)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, StageMarker)); err != nil {
		t.Errorf("Sweep followed a link: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(markerElsewhere, "m")); string(got) != markerText {
		t.Error("the file a marker link points at changed")
	}
	if again, err := Sweep(parent); err != nil || len(again.Removed)+len(again.Restored) != 0 {
		t.Errorf("a second Sweep did %+v, %v", again, err)
	}
}

// TestPlaceAsideCrash: the fallback of Place where the system has no
// atomic exchange, cut between its two renames (the old folder aside, the
// new one not yet in place): Sweep puts the old folder back.
func TestPlaceAsideCrash(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "skills")
	target := filepath.Join(parent, "hello")
	skilltest.WriteFiles(t, target, map[string]string{"SKILL.md": "old"})
	st := abandon(t, parent, StagePrefix)
	os.MkdirAll(filepath.Join(st, asideName), 0o755)
	if err := os.Rename(target, filepath.Join(st, asideName, "hello")); err != nil {
		t.Fatal(err)
	}
	swept, err := Sweep(parent)
	if err != nil || !slices.Equal(swept.Restored, []string{target}) {
		t.Fatalf("Sweep = %+v, %v", swept, err)
	}
	if got, _ := os.ReadFile(filepath.Join(target, "SKILL.md")); string(got) != "old" {
		t.Errorf("put back %q", got)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("left: %v", ents)
	}
}

// TestNewStagingRacesSweep: staging folders made while other goroutines
// sweep the same folder in a tight loop are never taken from under their
// maker: every one NewStaging returns is still there, marked, until it is
// closed. (Under this much sweeping NewStaging may give up, after making
// another folder each time it found one swept: that is errSwept, never a
// folder taken later.)
func TestNewStagingRacesSweep(t *testing.T) {
	parent := t.TempDir()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				Sweep(parent)
			}
		})
	}
	made := 0
	for range 300 {
		st, err := NewStaging(parent, PullPrefix)
		if errors.Is(err, errSwept) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		made++
		if _, err := st.Write("hello", []string{"SKILL.md"}, [][]byte{[]byte("x")}); err != nil {
			t.Fatalf("writing into a new staging folder: %v", err)
		}
		if got, err := os.ReadFile(filepath.Join(st.Dir, StageMarker)); err != nil || string(got) != markerText {
			t.Fatalf("marker: %q, %v", got, err)
		}
		st.Close()
	}
	stop.Store(true)
	wg.Wait()
	if made < 100 {
		t.Errorf("only %d of 300 staging folders could be made", made)
	}
}
