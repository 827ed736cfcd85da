package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/skilltest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func skillFile(name string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: test skill %s\n---\n\nBody.\n", name, name)
}

// watcher runs Watch in the background and collects the snapshots it hands over.
type watcher struct {
	mu    sync.Mutex
	snaps []*catalog.Catalog
	done  chan error
}

func startWatch(t *testing.T, c *catalog.Catalog, opts *catalog.WatchOptions) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{done: make(chan error, 1)}
	// The test's changes start once every directory is watched, whatever
	// the machine's load: Started says so, a fixed sleep could not.
	o := catalog.WatchOptions{}
	if opts != nil {
		o = *opts
	}
	started := make(chan struct{})
	caller := o.Started
	o.Started = func() {
		if caller != nil {
			caller()
		}
		close(started)
	}
	go func() {
		w.done <- catalog.Watch(ctx, c, &o, func(n *catalog.Catalog) {
			w.mu.Lock()
			w.snaps = append(w.snaps, n)
			w.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-w.done:
			if err != nil {
				t.Errorf("Watch returned %v after cancel, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Watch did not return within 5s of cancel")
		}
	})
	select {
	case <-started:
	case err := <-w.done:
		t.Fatalf("Watch returned %v before it started", err)
	case <-time.After(time.Minute):
		t.Fatal("Watch did not start within a minute")
	}
	return w
}

// waitFor waits until cond holds for the latest snapshot.
func (w *watcher) waitFor(t *testing.T, what string, cond func(*catalog.Catalog) bool) *catalog.Catalog {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		var last *catalog.Catalog
		if len(w.snaps) > 0 {
			last = w.snaps[len(w.snaps)-1]
		}
		w.mu.Unlock()
		if last != nil && cond(last) {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no snapshot where %s within 10s", what)
	return nil
}

func (w *watcher) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.snaps)
}

func TestWatchPicksUpChanges(t *testing.T) {
	dir := t.TempDir()
	skilltest.WriteFile(t, filepath.Join(dir, "one", "SKILL.md"), skillFile("one"))
	c, err := catalog.OpenDir(dir, &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, c, &catalog.WatchOptions{Debounce: 30 * time.Millisecond, MaxDelay: 300 * time.Millisecond, Logger: quiet})

	// A new skill in a new directory, nested two levels down.
	skilltest.WriteFile(t, filepath.Join(dir, "team", "two", "SKILL.md"), skillFile("two"))
	w.waitFor(t, "team/two is published", func(c *catalog.Catalog) bool { return c.Skill("skill://team/two/SKILL.md") != nil })

	// A file added inside the directory created after the watch started.
	skilltest.WriteFile(t, filepath.Join(dir, "team", "two", "refs", "a.md"), "a")
	w.waitFor(t, "team/two/refs/a.md is published", func(c *catalog.Catalog) bool { return c.File("skill://team/two/refs/a.md") != nil })

	// A modified file gets a new digest; an unchanged one keeps its entry.
	before := w.waitFor(t, "", func(*catalog.Catalog) bool { return true })
	skilltest.WriteFile(t, filepath.Join(dir, "team", "two", "refs", "a.md"), "changed")
	after := w.waitFor(t, "a.md has a new digest", func(c *catalog.Catalog) bool {
		f := c.File("skill://team/two/refs/a.md")
		return f != nil && f.Size == int64(len("changed"))
	})
	if after.Stats().Hashed > 3 {
		t.Errorf("reload re-hashed %d files for one change", after.Stats().Hashed)
	}
	if before.File("skill://one/SKILL.md").Digest != after.File("skill://one/SKILL.md").Digest {
		t.Errorf("an unchanged file changed digest")
	}

	// A removed skill disappears.
	if err := os.RemoveAll(filepath.Join(dir, "one")); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "one is gone", func(c *catalog.Catalog) bool { return c.Skill("skill://one/SKILL.md") == nil })
}

// TestWatchBurst writes 1,000 files as fast as it can: the watcher must
// rebuild a bounded number of times, not once per write, and end on the
// final state.
func TestWatchBurst(t *testing.T) {
	dir := t.TempDir()
	skilltest.WriteFile(t, filepath.Join(dir, "burst", "SKILL.md"), skillFile("burst"))
	c, err := catalog.OpenDir(dir, &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, c, &catalog.WatchOptions{Debounce: 100 * time.Millisecond, MaxDelay: time.Second, Logger: quiet})
	start := time.Now()
	for i := range 1000 {
		skilltest.WriteFile(t, filepath.Join(dir, "burst", "data", fmt.Sprintf("f%04d.txt", i%200)), fmt.Sprintf("write %d", i))
	}
	elapsed := time.Since(start)
	w.waitFor(t, "all 200 files carry their last write", func(c *catalog.Catalog) bool {
		for i := 800; i < 1000; i++ {
			f := c.File(fmt.Sprintf("skill://burst/data/f%04d.txt", i%200))
			if f == nil || f.Size != int64(len(fmt.Sprintf("write %d", i))) {
				return false
			}
		}
		return true
	})
	// No wait here: a rebuild after the final state has its ID, and Watch
	// hands over only snapshots whose ID changed, so the count is final.
	// One rebuild per MaxDelay while the burst lasts, plus the final one.
	bound := int(elapsed/time.Second) + 3
	if n := w.count(); n > bound {
		t.Errorf("1,000 writes in %v produced %d snapshots, want at most %d", elapsed, n, bound)
	} else {
		t.Logf("1,000 writes in %v produced %d snapshots", elapsed, n)
	}
}

func TestWatchNeedsADirectory(t *testing.T) {
	c, err := catalog.Open(fstest.MapFS{"x/SKILL.md": {Data: []byte(skillFile("x"))}}, &catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	err = catalog.Watch(context.Background(), c, nil, func(*catalog.Catalog) {})
	if !errors.Is(err, catalog.ErrNotWatchable) {
		t.Fatalf("Watch on an fs.FS catalog: %v, want ErrNotWatchable", err)
	}
}
