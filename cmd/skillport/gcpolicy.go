package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// buildHeapCeiling is how large serve lets its memory grow while it
// builds its first catalogs, and buildGCPercent how far past what is live
// the heap may grow before a collection meanwhile. A build allocates
// about eight times what it keeps (every file's walk record, each
// SKILL.md's YAML tree, the strings packed into the catalog): at the
// default setting the collector runs each time the heap doubles, first
// every few MiB, and marks the growing live heap again each time, so that
// on an 18,449-skill tree it ran 17 times during a 4 s build. Letting the
// heap grow to five times what is live, within the ceiling, it runs about
// five times. Not collecting at all until the ceiling (GOGC=off) saved a
// little more CPU but left the build's surviving objects spread over the
// whole ceiling, 5 MB more resident once serve settled.
const (
	buildHeapCeiling = 384 << 20
	buildGCPercent   = 400
)

// buildGCPoll is how often buildGC looks at the live heap.
const buildGCPoll = 10 * time.Millisecond

// buildGC sets the collector policy serve builds its first catalogs with
// and returns the function that ends it (serve calls it once they are
// built, before it gives their garbage back to the system). The policy:
// collect when the heap reaches percent more than what is live, or when
// the process's memory reaches ceiling (GOGC=percent with a memory limit
// of ceiling). A limit that the live heap nears would make the collector
// run without pause, so once more than half the ceiling is live the usual
// settings come back for the rest of the build: then, as by default, the
// heap grows to twice what is live, which is then more than the ceiling.
// So the heap stays within the larger of ceiling and twice the live heap,
// what the default allows for a heap of half the ceiling. An explicit
// GOGC or GOMEMLIMIT wins: with either set the policy is not applied. The
// end function restores the collector settings found at the start;
// calling it again does nothing.
func buildGC(ceiling int64, percent int) (end func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return func() {}
	}
	limit := debug.SetMemoryLimit(ceiling)
	prevPercent := debug.SetGCPercent(percent)
	restore := func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(limit)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(buildGCPoll)
		defer tick.Stop()
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			metrics.Read(live)
			if live[0].Value.Kind() != metrics.KindUint64 || int64(live[0].Value.Uint64()) > ceiling/2 {
				restore()
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			restore()
		})
	}
}
