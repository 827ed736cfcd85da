package catalog

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/skilltest"
)

// countHandler counts the log records whose message contains match.
type countHandler struct {
	match string
	mu    sync.Mutex
	n     int
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }
func (h *countHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// A tree that has not changed since the catalog's build began is not
// rebuilt when Watch starts, even with what the unchanged-tree fast path
// cannot vouch for (a symbolic link, a file that is not published): on a
// large tree that rebuild held two catalogs and doubled serve's memory.
// Every build logs the tree's diagnostics, so the log counts the builds.
// Changes made before Watch started are still picked up, however they
// were made.
func TestWatchStartRebuildsOnlyWhenChanged(t *testing.T) {
	old := changeSlack
	changeSlack = 50 * time.Millisecond
	t.Cleanup(func() { changeSlack = old })

	type change struct {
		name  string
		setup func(t *testing.T, dir string) // before the build
		do    func(t *testing.T, dir string) // after it, before Watch
		want  bool
	}
	for _, tc := range []change{
		{name: "nothing"},
		{name: "link into a dot directory", want: true, setup: func(t *testing.T, dir string) {
			// The walk does not check what is behind it: always rebuild.
			if err := os.Symlink("../.shared/notes.md", filepath.Join(dir, "a", "notes.md")); err != nil {
				t.Fatal(err)
			}
		}},
		{"file rewritten in place", nil, func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, "a", "guide.md"), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("G"), 0); err != nil { // same size, same entries
				t.Fatal(err)
			}
		}, true},
		{"skill added", nil, func(t *testing.T, dir string) {
			skilltest.WriteFile(t, filepath.Join(dir, "c", "SKILL.md"), "---\nname: c\ndescription: C.\n---\n")
		}, true},
		{"unpublished file fixed", nil, func(t *testing.T, dir string) {
			skilltest.WriteFile(t, filepath.Join(dir, "bad", "SKILL.md"), "---\nname: bad\ndescription: Fixed.\n---\n")
		}, true},
		{"symbolic link replaced", nil, func(t *testing.T, dir string) {
			p := filepath.Join(dir, "a", "guide-link.md")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("SKILL.md", p); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		for _, listed := range []bool{false, true} {
			name := tc.name
			if listed {
				// Every listing is kept: the watches are installed from them.
				name += "/from listings"
			}
			t.Run(name, func(t *testing.T) {
				if listed {
					old := racyWindow
					racyWindow = -time.Hour
					t.Cleanup(func() { racyWindow = old })
				}
				testWatchStart(t, tc.setup, tc.do, tc.want)
			})
		}
	}
}

// testWatchStart builds a small tree, applies do, and reports whether Watch
// rebuilt it when it started.
func testWatchStart(t *testing.T, setup, do func(*testing.T, string), want bool) {
	dir := t.TempDir()
	skilltest.WriteFile(t, filepath.Join(dir, "a", "SKILL.md"), "---\nname: a\ndescription: A.\n---\n")
	skilltest.WriteFile(t, filepath.Join(dir, "a", "guide.md"), "guide\n")
	skilltest.WriteFile(t, filepath.Join(dir, ".shared", "notes.md"), "notes\n")
	if err := os.Symlink("guide.md", filepath.Join(dir, "a", "guide-link.md")); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(t, dir)
	}
	skilltest.WriteFile(t, filepath.Join(dir, "bad", "SKILL.md"), "---\nname: bad\n---\n") // no description
	time.Sleep(3 * changeSlack)

	h := &countHandler{match: "description"}
	c, err := OpenDir(dir, &Options{Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h.count() == 0 {
		t.Fatal("the build logged no diagnostic about the missing description; the test cannot count builds")
	}
	builds := h.count()
	if do != nil {
		do(t, dir)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	var delivered atomic.Bool // a rebuild that changed the ID
	var starts atomic.Int32
	started := make(chan struct{})
	// Watch decides before Started whether the tree must be checked again,
	// and logs that it will: the test waits for those events, not for a
	// wall-clock window a loaded machine may not give Watch.
	rescan := &countHandler{match: "checking the tree once"}
	go func() {
		done <- Watch(ctx, c, &WatchOptions{Debounce: 10 * time.Millisecond, Logger: slog.New(rescan), Started: func() {
			if starts.Add(1) == 1 {
				close(started)
			}
		}}, func(*Catalog) { delivered.Store(true) })
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Watch returned %v before Started", err)
	case <-time.After(time.Minute):
		t.Fatal("Watch did not call Started within a minute")
	}
	rebuilt := func() bool { return h.count() > builds || delivered.Load() }
	if rescan.count() > 0 { // the rebuild follows Started: wait for it
		for deadline := time.Now().Add(time.Minute); !rebuilt(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("Watch said it would check the tree again, and did not rebuild within a minute")
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("Started called %d times, want once", n)
	}
	if got := rebuilt(); got != want || (rescan.count() > 0) != want {
		t.Errorf("rebuilt when Watch started: %v (checked the tree again: %v), want %v", got, rescan.count() > 0, want)
	}
}

// Watches installed from the kept listings see changes anywhere below:
// a file written deep in a skill after Watch started is delivered.
func TestWatchFromListingsSeesDeepChanges(t *testing.T) {
	old := racyWindow
	racyWindow = -time.Hour
	t.Cleanup(func() { racyWindow = old })
	dir := skilltest.WriteTree(t, map[string]string{
		"col/a/SKILL.md":          "---\nname: a\ndescription: A.\n---\n",
		"col/a/refs/deep/x.md":    "x\n",
		"col/b/SKILL.md":          "---\nname: b\ndescription: B.\n---\n",
		"col/b/refs/other/one.md": "1\n",
	})
	c, err := OpenDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if l, _ := c.src.loadListings(); len(l) < 7 {
		t.Fatalf("the build kept %d listings, want one per directory (7): the watches would not come from them", len(l))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	got := make(chan *Catalog, 4)
	go Watch(ctx, c, &WatchOptions{Debounce: 10 * time.Millisecond, Started: func() { close(started) }}, func(n *Catalog) { got <- n })
	<-started
	if err := os.WriteFile(filepath.Join(dir, "col", "b", "refs", "other", "two.md"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n.File("skill://col/b/refs/other/two.md") == nil {
			t.Errorf("the delivered snapshot lacks the new file")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a file written in a deep directory after Watch started was never delivered")
	}
}
