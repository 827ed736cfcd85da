package catalog

import (
	"flag"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"testing"

	"github.com/skillport/skillport/catalog/internal/gen"
)

var benchHeapProfile = flag.String("catalog.heapprofile", "", "write the heap profile of BenchmarkServedHeap's first catalog, while it is live, to this file")

// BenchmarkServedHeap measures what a served catalog of the real-world tree
// (-catalog.realskills skills, 20,000 by default) keeps alive: the live heap
// after a GC once OpenDir returned (live-MB, and per skill and per file),
// and the live heap with that catalog and an unchanged Reload of it both
// held, as a server holds the snapshot it serves while a watcher holds the
// latest (reload-extra-MB: what the second snapshot adds; near 0 when it
// shares the first's skills, files and directories), and the heap in use
// once the garbage is given back (heap-inuse-MB: live objects and the
// unused slots of the pages they sit in, what stays resident).
func BenchmarkServedHeap(b *testing.B) {
	t := treeFor(b, gen.Options{Skills: *benchRealSkills, Seed: benchSeed, Scale: 1, RealWorld: true})
	o := benchOptions()
	o.AllowHardlinks = true
	live := func() float64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return float64(s[0].Value.Uint64())
	}
	// inuse is what the heap's pages hold once the garbage is given back:
	// live objects and the free slots of pages that still hold one. Live
	// objects spread thinly over many pages keep them all resident.
	inuse := func() float64 {
		debug.FreeOSMemory()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
		metrics.Read(s)
		return float64(s[0].Value.Uint64() + s[1].Value.Uint64())
	}
	var sizes, extras, inuses []float64
	for b.Loop() {
		base := live()
		c, err := OpenDir(t.dir, o)
		if err != nil {
			b.Fatal(err)
		}
		if st := c.Stats(); st.Skills != t.stats.Skills {
			b.Fatalf("published %d skills, the tree has %d", st.Skills, t.stats.Skills)
		}
		one := live()
		inuses = append(inuses, inuse())
		if *benchHeapProfile != "" {
			writeHeapProfile(b, *benchHeapProfile)
		}
		next, err := c.Reload()
		if err != nil {
			b.Fatal(err)
		}
		two := live()
		runtime.KeepAlive(c)
		runtime.KeepAlive(next)
		c.Close()
		sizes = append(sizes, one-base)
		extras = append(extras, two-one)
	}
	const mb = 1 << 20
	b.ReportMetric(median(sizes)/mb, "live-MB")
	b.ReportMetric(median(sizes)/float64(t.stats.Skills), "live-B/skill")
	b.ReportMetric(median(sizes)/float64(t.stats.Files), "live-B/file")
	b.ReportMetric(median(extras)/mb, "reload-extra-MB")
	b.ReportMetric(median(inuses)/mb, "heap-inuse-MB")
}

// writeHeapProfile writes the heap profile now, with what is live in it
// (inuse_space), for go tool pprof.
func writeHeapProfile(b *testing.B, name string) {
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}
