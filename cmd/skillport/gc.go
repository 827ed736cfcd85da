package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/internal/published"
)

// hostGCPercent is the garbage-collector setting (runtime/debug.SetGCPercent)
// that the host commands (ls, verify, pull, load, gateway) run with when
// GOGC is not set. go-sdk decodes each JSON-RPC message with fresh 32 KiB
// buffers, so a process whose live heap is a few MiB collects every few
// messages; at 400, discovering 20 servers takes about half the CPU
// (BenchmarkDiscovery20 in host/e2e reports both settings). The heap may
// grow to five times what is live rather than twice.
const hostGCPercent = 400

// hostGC sets the collector for commands that run a host: they churn
// through short-lived JSON-RPC buffers over a small live heap. An explicit
// GOGC in the environment wins. serve keeps the default percentage: its
// live heap is the catalog, and its memory is what operators size; it sets
// a soft memory limit instead (serveMemoryLimit).
func hostGC(cmd *cobra.Command) {
	if cmd.Annotations["gc"] != "host" {
		return
	}
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(hostGCPercent)
}

// hostCommand marks cmd as one that runs a host.
func hostCommand(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations["gc"] = "host"
	return cmd
}

// serveMemoryFactor and serveMemoryFloor set the soft memory limit serve
// runs with when GOMEMLIMIT is not set: this many times the live heap
// right after the catalog is built, and at least the floor.
const (
	serveMemoryFactor = 3
	serveMemoryFloor  = 64 << 20
)

// serveMemoryLimit gives serve a soft memory limit (runtime/debug.SetMemoryLimit)
// from what it needs to hold once its sources are built, unless GOMEMLIMIT
// is set. Under load the live heap hardly moves (the catalog, encoded
// entries), but with the default collector the heap grows to twice it
// between collections, and a 10,000-skill server read by 32 clients went
// from 120 to 180 MiB of RSS; with the limit it stays near 125
// (BenchmarkServeRSSUnderLoad10k). The limit is soft: beyond it the
// collector runs more often (at most half the CPU), it never refuses
// memory, so a reload that briefly holds two catalogs still succeeds.
func serveMemoryLimit() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	debug.SetMemoryLimit(max(int64(s[0].Value.Uint64())*serveMemoryFactor, serveMemoryFloor))
}

// Defaults of [memoryReleaser] for serve.
const (
	serveReleaseDelay = 2 * time.Second
	serveReleaseEvery = time.Minute
)

// memoryReleaser gives the memory of a replaced catalog back to the system
// after serve swaps in a new snapshot. The collector frees the old catalog
// once nothing reads it, but keeps its pages for a heap it expects to grow
// again, so after a reload of a large tree the process would stay at what
// it needed with both catalogs alive. A release costs a full collection, so
// changes are coalesced: at most one release per every, delay after the
// first change (requests still reading the old snapshot finish first).
// After each release the soft memory limit follows the new live heap.
type memoryReleaser struct {
	delay, every time.Duration
	release      func() // debug.FreeOSMemory, then serveMemoryLimit
	kick         chan struct{}
}

// serveReleaser returns the releaser serve runs.
func serveReleaser() *memoryReleaser {
	return &memoryReleaser{delay: serveReleaseDelay, every: serveReleaseEvery, release: func() {
		debug.FreeOSMemory()
		serveMemoryLimit()
	}}
}

// follow releases memory after changes of src until ctx is done.
func (r *memoryReleaser) follow(ctx context.Context, src published.Source) {
	r.kick = make(chan struct{}, 1)
	cancel := src.OnChange(func(_, _ published.Snapshot) {
		select {
		case r.kick <- struct{}{}:
		default: // one is pending already
		}
	})
	go func() {
		defer cancel()
		var last time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.kick:
			}
			wait := max(r.delay, time.Until(last.Add(r.every)))
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			r.release()
			last = time.Now()
		}
	}()
}

// watchGCPercent is the collector setting while serve installs its
// watches (unless GOGC is set). The walk over every directory and file of
// a large tree allocates tens of MiB of garbage among the watches that
// stay (fsnotify keeps a record and the path of each directory); with the
// default setting the heap grows by half the catalog before the garbage is
// collected, and the watches end up spread over pages the runtime cannot
// give back. On the 21,066-skill real-world tree, collecting at 10% kept
// 186 -> 160 MiB resident once settled, for a few more collections of a
// heap that is mostly the catalog, about half a second of CPU
// (BenchmarkProcesses, serve-rss-settled-MB).
const watchGCPercent = 10

// watchGC lowers the collector setting until every watch is in place
// (watchStarted), unless GOGC is set.
func watchGC(watchers int) {
	if _, set := os.LookupEnv("GOGC"); set || watchers == 0 {
		return
	}
	watching.Store(int32(watchers))
	watchingPercent = debug.SetGCPercent(watchGCPercent)
}

var (
	watching        atomic.Int32
	watchingPercent int
)

// watchStarted gives back what installing a directory's watches used, and
// restores the collector once the last source's watches are in place.
func watchStarted() {
	watchDone()
	debug.FreeOSMemory()
}

// watchDone counts a source whose watches are in place, or that cannot be
// watched, and restores the collector after the last.
func watchDone() {
	if watching.Add(-1) == 0 {
		debug.SetGCPercent(watchingPercent)
	}
}
