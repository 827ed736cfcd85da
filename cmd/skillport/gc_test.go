package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
)

// TestHostGC checks that host commands, and only they, raise the GC
// percentage, and that an explicit GOGC wins.
func TestHostGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	if v, ok := os.LookupEnv("GOGC"); ok {
		os.Unsetenv("GOGC")
		t.Cleanup(func() { os.Setenv("GOGC", v) })
	}
	for _, tc := range []struct {
		cmd  string
		want int
	}{{"ls", hostGCPercent}, {"verify", hostGCPercent}, {"pull", hostGCPercent}, {"load", hostGCPercent}, {"gateway", hostGCPercent}, {"serve", 100}, {"validate", 100}} {
		cmd, _, err := rootCmd.Find([]string{tc.cmd})
		if err != nil || cmd.Name() != tc.cmd {
			t.Fatalf("no %s command: %v", tc.cmd, err)
		}
		debug.SetGCPercent(100)
		hostGC(cmd)
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("%s: GC percent %d, want %d", tc.cmd, got, tc.want)
		}
	}
	t.Setenv("GOGC", "100")
	cmd, _, _ := rootCmd.Find([]string{"ls"})
	hostGC(cmd)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("ls with GOGC=100 in the environment: GC percent %d, want 100", got)
	}
}

// TestServeMemoryLimit: serve sets a soft memory limit of a few times its
// live heap (at least the floor), and leaves an explicit GOMEMLIMIT alone.
func TestServeMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Cleanup(func() { os.Setenv("GOMEMLIMIT", v) })
	}
	os.Unsetenv("GOMEMLIMIT")
	debug.SetMemoryLimit(math.MaxInt64)
	serveMemoryLimit()
	got := debug.SetMemoryLimit(-1)
	if got == math.MaxInt64 || got < serveMemoryFloor {
		t.Errorf("without GOMEMLIMIT: limit %d, want at least %d and set", got, serveMemoryFloor)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(12345 << 20)
	serveMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != 12345<<20 {
		t.Errorf("with GOMEMLIMIT set: limit changed to %d", got)
	}
}

// TestMemoryReleaser: a swap of serve's catalog is followed by one release
// of memory, delay later; a burst of swaps costs one release, and the next
// comes no sooner than every after the last.
func TestMemoryReleaser(t *testing.T) {
	// In a synctest bubble: time moves when every goroutine waits, so each
	// expectation sees exactly the releases due by then, however loaded
	// the machine is.
	synctest.Test(t, testMemoryReleaser)
}

func testMemoryReleaser(t *testing.T) {
	cats := make([]*catalog.Catalog, 2)
	for i := range cats {
		name := fmt.Sprintf("s%d", i)
		c, err := catalog.Open(fstest.MapFS{name + "/SKILL.md": {Data: []byte("---\nname: " + name + "\ndescription: D.\n---\n")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cats[i] = c
	}
	src := published.NewCatalogSource(cats[0])
	var n atomic.Int32
	r := &memoryReleaser{delay: 50 * time.Millisecond, every: 600 * time.Millisecond, release: func() { n.Add(1) }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.follow(ctx, src)
	expect := func(when string, want int32) {
		t.Helper()
		synctest.Wait()
		if got := n.Load(); got != want {
			t.Fatalf("%s: %d releases, want %d", when, got, want)
		}
	}
	time.Sleep(150 * time.Millisecond)
	expect("without a swap", 0)
	for i := range 5 {
		src.Swap(cats[(i+1)%2])
	}
	time.Sleep(200 * time.Millisecond)
	expect("after a burst of swaps", 1)
	src.Swap(cats[0])
	time.Sleep(200 * time.Millisecond)
	expect("after another swap within every", 1)
	time.Sleep(600 * time.Millisecond)
	expect("once every has passed", 2)
	cancel()
	time.Sleep(50 * time.Millisecond)
	src.Swap(cats[1])
	time.Sleep(150 * time.Millisecond)
	expect("after ctx ended", 2)
}

// TestWatchGC: while serve installs its watches the collector runs at
// watchGCPercent; the setting comes back once every watched source has
// started or failed, and an explicit GOGC is left alone.
func TestWatchGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	if v, ok := os.LookupEnv("GOGC"); ok {
		os.Unsetenv("GOGC")
		t.Cleanup(func() { os.Setenv("GOGC", v) })
	}
	percent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	debug.SetGCPercent(80)
	watchGC(2)
	if got := percent(); got != watchGCPercent {
		t.Fatalf("installing watches: GC percent %d, want %d", got, watchGCPercent)
	}
	watchStarted()
	if got := percent(); got != watchGCPercent {
		t.Errorf("one of two sources started: GC percent %d, want %d", got, watchGCPercent)
	}
	watchDone() // the other cannot be watched
	if got := percent(); got != 80 {
		t.Errorf("every source started: GC percent %d, want 80 back", got)
	}
	watchGC(0)
	if got := percent(); got != 80 {
		t.Errorf("nothing to watch: GC percent %d, want 80", got)
	}
	t.Setenv("GOGC", "80")
	watchGC(1)
	if got := percent(); got != 80 {
		t.Errorf("GOGC=80 in the environment: GC percent %d, want 80", got)
	}
}
