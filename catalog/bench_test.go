package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/skillport/skillport/catalog/internal/gen"
	"github.com/skillport/skillport/internal/cputime"
)

// The benchmarks read generated trees (package gen). Generating the
// reference tree costs tens of seconds of file creation, so each tree is
// written once under os.TempDir() and reused by later runs; its directory
// name carries every input of the generator, and a tree whose writing was
// interrupted is never used (it is renamed into place only when complete).
// Remove them with: rm -rf "$TMPDIR"/skillport-bench-*
var (
	benchSkills     = flag.Int("catalog.skills", gen.DefaultSkills, "top-level skills in the tree of BenchmarkOpen10k and BenchmarkReloadUnchanged")
	benchRealSkills = flag.Int("catalog.realskills", 20_000, "top-level skills in the real-world tree of BenchmarkOpenRealWorld and BenchmarkProcesses")
	benchMemSkills  = flag.Int("catalog.memskills", 1000, "top-level skills in the two trees (content scale 1 and 10) of BenchmarkPeakHeap")
)

const benchSeed = 1

type benchTree struct {
	dir   string
	stats gen.Stats
}

var (
	benchTreesMu sync.Mutex
	benchTrees   = map[gen.Options]benchTree{}
)

// treeFor returns the generated tree for o, writing it if no run has yet.
func treeFor(b *testing.B, o gen.Options) benchTree {
	b.Helper()
	benchTreesMu.Lock()
	defer benchTreesMu.Unlock()
	if t, ok := benchTrees[o]; ok {
		return t
	}
	base := filepath.Join(os.TempDir(), fmt.Sprintf("skillport-bench-v%d-skills%d-seed%d-scale%d", gen.Version, o.Skills, o.Seed, o.Scale))
	if o.RealWorld {
		base += "-real"
	}
	if o.Invalid > 0 {
		base += fmt.Sprintf("-invalid%d", o.Invalid)
	}
	t := benchTree{dir: filepath.Join(base, "tree")}
	if data, err := os.ReadFile(filepath.Join(base, "stats.json")); err == nil && json.Unmarshal(data, &t.stats) == nil {
		benchTrees[o] = t
		return t
	}
	// Write beside the final place, then rename: a concurrent or interrupted
	// run never leaves a half tree under the final name.
	tmp, err := os.MkdirTemp(os.TempDir(), "skillport-bench-tmp-")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	st, err := o.Write(filepath.Join(tmp, "tree"))
	if err != nil {
		os.RemoveAll(tmp)
		b.Fatal(err)
	}
	data, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(tmp, "stats.json"), data, 0o644); err != nil {
		os.RemoveAll(tmp)
		b.Fatal(err)
	}
	if err := os.Rename(tmp, base); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(filepath.Join(base, "stats.json")); serr != nil {
			b.Fatalf("placing the generated tree: %v", err)
		} // else another run placed the same tree first
	}
	b.Logf("generated %s: %d skills, %d files, %.0f MiB in %v", base, st.Skills, st.Files, float64(st.Bytes)/(1<<20), time.Since(start).Round(time.Millisecond))
	t.stats = st
	benchTrees[o] = t
	return t
}

// floorFiles lists the files a catalog of dir publishes, as OS paths: what
// the floor reads. Listing is not part of the floor.
func floorFiles(b *testing.B, dir string) []string {
	b.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return files
}

// hashFloor is the physical floor of building a catalog: open, read and
// SHA-256 every file, with as many workers as the catalog uses, and nothing
// else. It returns the bytes read.
func hashFloor(files []string, workers int) (int64, error) {
	var (
		next  atomic.Int64
		total atomic.Int64
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sha256.New()
			buf := make([]byte, 64<<10)
			var sum [sha256.Size]byte
			var n int64
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					break
				}
				f, err := os.Open(files[i])
				if err == nil {
					// A plain read loop: io.Copy from an *os.File goes
					// through File.WriteTo, which allocates a buffer per file.
					h.Reset()
					for {
						k, rerr := f.Read(buf)
						h.Write(buf[:k])
						n += int64(k)
						if rerr != nil {
							if rerr != io.EOF {
								err = rerr
							}
							break
						}
					}
					h.Sum(sum[:0])
					f.Close()
				}
				if err != nil {
					errMu.Lock()
					first = cmpErr(first, err)
					errMu.Unlock()
				}
			}
			total.Add(n)
		}()
	}
	wg.Wait()
	return total.Load(), first
}

// walkFloor is the floor of a program that must find the files first:
// filepath.WalkDir lists the tree (one goroutine, as WalkDir is serial) and
// hands every regular file to workers goroutines that open, read and
// SHA-256 it as hashFloor does. It returns the bytes read.
func walkFloor(dir string, workers int) (int64, error) { return floorWalk(dir, workers, false) }

// parseFloor is walkFloor that also decodes the frontmatter of every
// SKILL.md into a yaml.Node with a plain yaml.NewDecoder(...).Decode, as
// any program that validates frontmatter with our YAML parser must at
// least: what is left of a build's ratio to it is ours, not the parser's.
// A SKILL.md is read whole (into a buffer each worker reuses) so that it
// can be decoded; errors of the decode are ignored, a floor only does the
// work.
func parseFloor(dir string, workers int) (int64, error) { return floorWalk(dir, workers, true) }

// floorWalk is walkFloor, and with parse parseFloor.
func floorWalk(dir string, workers int, parse bool) (int64, error) {
	paths := make(chan string, 1024)
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sha256.New()
			buf := make([]byte, 64<<10)
			var doc []byte // a whole SKILL.md, for parse
			var sum [sha256.Size]byte
			var n int64
			for p := range paths {
				f, err := os.Open(p)
				if err == nil && parse && filepath.Base(p) == FileNameSKILL {
					doc, err = readWhole(f, doc[:0])
					h.Reset()
					h.Write(doc)
					h.Sum(sum[:0])
					n += int64(len(doc))
					var node yaml.Node
					_ = yaml.NewDecoder(bytes.NewReader(frontmatterOf(doc))).Decode(&node)
					f.Close()
				} else if err == nil {
					h.Reset()
					for {
						k, rerr := f.Read(buf)
						h.Write(buf[:k])
						n += int64(k)
						if rerr != nil {
							if rerr != io.EOF {
								err = rerr
							}
							break
						}
					}
					h.Sum(sum[:0])
					f.Close()
				}
				if err != nil {
					errMu.Lock()
					first = cmpErr(first, err)
					errMu.Unlock()
				}
			}
			total.Add(n)
		}()
	}
	werr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			paths <- p
		}
		return err
	})
	close(paths)
	wg.Wait()
	return total.Load(), cmpErr(werr, first)
}

// readWhole appends what f holds to buf, growing it as needed.
func readWhole(f *os.File, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		k, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// frontmatterOf returns the YAML text between the delimiter lines of a
// SKILL.md, nil if there is none.
func frontmatterOf(data []byte) []byte {
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	_, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil
	}
	start := len(data) - len(rest)
	for pos := start; pos < len(data); {
		line, next, _ := bytes.Cut(data[pos:], []byte("\n"))
		if string(bytes.TrimRight(line, " \t\r")) == "---" {
			return data[start:pos]
		}
		pos = len(data) - len(next)
	}
	return nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func benchOptions() *Options {
	return &Options{Logger: slog.New(slog.DiscardHandler)}
}

// checkTree fails the benchmark when the catalog did not publish the whole
// generated tree: a ratio to a floor that read other bytes would mean nothing.
func checkTree(b *testing.B, c *Catalog, st gen.Stats) {
	b.Helper()
	cs := c.Stats()
	if cs.Skills != st.Skills || cs.Files != st.Files || cs.Bytes != st.Bytes || len(c.Diagnostics()) != 0 {
		b.Fatalf("catalog published %d skills, %d files, %d bytes, %d diagnostics; the tree has %d skills, %d files, %d bytes",
			cs.Skills, cs.Files, cs.Bytes, len(c.Diagnostics()), st.Skills, st.Files, st.Bytes)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkOpen10k builds a catalog of the generated tree (10,000 skills,
// about 50,000 files by default) and, in each iteration, right before it,
// runs three floors with the same parallelism: the physical floor (open,
// read and hash a given list of the same files: hashFloor), the floor of a
// program that must also find them (filepath.WalkDir feeding the same
// workers: walkFloor), and that of one that must also parse every
// SKILL.md's frontmatter with our YAML parser (walkFloor plus a go-yaml
// Decode of each: parseFloor). ns/op is the build; floor-ns/op,
// walkfloor-ns/op and parsefloor-ns/op the floors; x-floor, x-walkfloor
// and x-parsefloor the medians over iterations of build time / floor time,
// each set being measured back to back so that load from other processes
// affects all alike; cpu-x-walkfloor and cpu-x-parsefloor are the median
// ratios of the CPU time (user and system, garbage collection included) of
// the build to the floor's, steadier than wall time on a shared machine.
// What separates x-parsefloor from x-walkfloor is the chosen parser's
// cost, which any implementation pays; what is left above x-parsefloor is
// ours. The page cache is warmed by one untimed run of each first, so all
// read from memory. Target: x-walkfloor ≤ 1.5.
func BenchmarkOpen10k(b *testing.B) {
	t := treeFor(b, gen.Options{Skills: *benchSkills, Seed: benchSeed, Scale: 1})
	benchOpen(b, t, benchOptions(), func(c *Catalog) { checkTree(b, c, t.stats) })
}

// BenchmarkOpenWalkers is BenchmarkOpen10k for each way of walking a
// directory: the descriptor walk (fd, the default on Linux) and the
// portable walk, opening every directory and file by its path through the
// tree's fs.FS (fs, os.Root's for a directory).
func BenchmarkOpenWalkers(b *testing.B) {
	t := treeFor(b, gen.Options{Skills: *benchSkills, Seed: benchSeed, Scale: 1})
	for _, w := range []struct {
		name string
		fd   bool
	}{{"fd", true}, {"fs", false}} {
		b.Run(w.name, func(b *testing.B) {
			useFDWalk = w.fd && fdWalkSupported
			defer func() { useFDWalk = fdWalkSupported }()
			benchOpen(b, t, benchOptions(), func(c *Catalog) { checkTree(b, c, t.stats) })
		})
	}
}

// BenchmarkOpenRealWorld is BenchmarkOpen10k on a tree with the shapes of
// public collections (gen.Options.RealWorld, 20,000 skills by default):
// mixed-case prefixes, renamed folders, nested metadata, list
// allowed-tools, CJK, CRLF, BOM, hard and symbolic links. Hard links are
// allowed so that every skill is published, as the floors read every file.
// Target: x-walkfloor ≤ 1.5.
func BenchmarkOpenRealWorld(b *testing.B) {
	t := treeFor(b, gen.Options{Skills: *benchRealSkills, Seed: benchSeed, Scale: 1, RealWorld: true})
	o := benchOptions()
	o.AllowHardlinks = true
	benchOpen(b, t, o, func(c *Catalog) {
		if st := c.Stats(); st.Skills != t.stats.Skills || st.Invalid != 0 {
			b.Fatalf("published %d skills (%d invalid), the tree has %d", st.Skills, st.Invalid, t.stats.Skills)
		}
	})
	b.ReportMetric(float64(t.stats.Skills), "skills")
	b.ReportMetric(float64(t.stats.Lenient), "warned-skills")
}

// benchOpen times OpenDir(t.dir, opts) against the three floors; check
// vets each catalog built.
func benchOpen(b *testing.B, t benchTree, opts *Options, check func(*Catalog)) {
	files := floorFiles(b, t.dir)
	workers := runtime.GOMAXPROCS(0)
	if n, err := hashFloor(files, workers); err != nil || n != t.stats.Bytes {
		b.Fatalf("floor read %d bytes (%v), the tree has %d", n, err, t.stats.Bytes)
	}
	if n, err := walkFloor(t.dir, workers); err != nil || n != t.stats.Bytes {
		b.Fatalf("walk floor read %d bytes (%v), the tree has %d", n, err, t.stats.Bytes)
	}
	if n, err := parseFloor(t.dir, workers); err != nil || n != t.stats.Bytes {
		b.Fatalf("parse floor read %d bytes (%v), the tree has %d", n, err, t.stats.Bytes)
	}
	c, err := OpenDir(t.dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	check(c)

	b.ReportAllocs()
	b.SetBytes(t.stats.Bytes)
	var floorTotal, walkTotal, parseTotal, openTotal time.Duration
	var ratios, walkRatios, cpuRatios, parseRatios, parseCPURatios []float64
	for b.Loop() {
		b.StopTimer()
		runtime.GC() // no side pays for another's garbage
		t0 := time.Now()
		if _, err := hashFloor(files, workers); err != nil {
			b.Fatal(err)
		}
		floor := time.Since(t0)
		runtime.GC()
		t0, cpu0 := time.Now(), cputime.Self()
		if _, err := walkFloor(t.dir, workers); err != nil {
			b.Fatal(err)
		}
		walk, walkCPU := time.Since(t0), cputime.Self()-cpu0
		runtime.GC()
		t0, cpu0 = time.Now(), cputime.Self()
		if _, err := parseFloor(t.dir, workers); err != nil {
			b.Fatal(err)
		}
		parse, parseCPU := time.Since(t0), cputime.Self()-cpu0
		runtime.GC()
		b.StartTimer()

		t1, cpu1 := time.Now(), cputime.Self()
		c, err := OpenDir(t.dir, opts)
		open, openCPU := time.Since(t1), cputime.Self()-cpu1
		if err != nil {
			b.Fatal(err)
		}
		if walkCPU > 0 && parseCPU > 0 {
			cpuRatios = append(cpuRatios, float64(openCPU)/float64(walkCPU))
			parseCPURatios = append(parseCPURatios, float64(openCPU)/float64(parseCPU))
		}
		b.StopTimer()
		check(c)
		b.StartTimer()
		floorTotal += floor
		walkTotal += walk
		parseTotal += parse
		openTotal += open
		ratios = append(ratios, float64(open)/float64(floor))
		walkRatios = append(walkRatios, float64(open)/float64(walk))
		parseRatios = append(parseRatios, float64(open)/float64(parse))
	}
	n := float64(len(ratios))
	b.ReportMetric(float64(floorTotal.Nanoseconds())/n, "floor-ns/op")
	b.ReportMetric(median(ratios), "x-floor")
	b.ReportMetric(float64(walkTotal.Nanoseconds())/n, "walkfloor-ns/op")
	b.ReportMetric(median(walkRatios), "x-walkfloor")
	b.ReportMetric(float64(parseTotal.Nanoseconds())/n, "parsefloor-ns/op")
	b.ReportMetric(median(parseRatios), "x-parsefloor")
	if len(cpuRatios) > 0 {
		b.ReportMetric(median(cpuRatios), "cpu-x-walkfloor")
		b.ReportMetric(median(parseCPURatios), "cpu-x-parsefloor")
	}
	b.ReportMetric(float64(t.stats.Files), "files")
}

// BenchmarkReloadUnchanged measures a second build of an unchanged tree
// ([Catalog.Reload], which reuses digests) against the first (OpenDir),
// both timed in every iteration. ns/op is the reload; first-ns/op the first
// build; x-first the median ratio of reload to first build. Target: x-first ≤ 0.2.
func BenchmarkReloadUnchanged(b *testing.B) {
	t := treeFor(b, gen.Options{Skills: *benchSkills, Seed: benchSeed, Scale: 1})
	if _, err := hashFloor(floorFiles(b, t.dir), runtime.GOMAXPROCS(0)); err != nil { // warm the page cache
		b.Fatal(err)
	}
	b.ReportAllocs()
	var firstTotal time.Duration
	var ratios []float64
	var hashed int
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		t0 := time.Now()
		first, err := OpenDir(t.dir, benchOptions())
		if err != nil {
			b.Fatal(err)
		}
		firstTime := time.Since(t0)
		runtime.GC()
		b.StartTimer()

		t1 := time.Now()
		second, err := first.Reload()
		reload := time.Since(t1)
		if err != nil {
			b.Fatal(err)
		}

		b.StopTimer()
		checkTree(b, second, t.stats)
		if second.ID() != first.ID() {
			b.Fatalf("reload of an unchanged tree changed the catalog ID")
		}
		hashed = second.Stats().Hashed
		firstTotal += firstTime
		ratios = append(ratios, float64(reload)/float64(firstTime))
		b.StartTimer()
	}
	b.ReportMetric(float64(firstTotal.Nanoseconds())/float64(len(ratios)), "first-ns/op")
	b.ReportMetric(median(ratios), "x-first")
	b.ReportMetric(float64(hashed), "rehashed-files")
}

// BenchmarkPeakHeap builds catalogs of two trees with the same skills,
// files and SKILL.md bytes, one with ten times the content of the other
// (gen.Options.Scale 10), and reports for each the peak heap above the
// starting point (sampled every 200µs) and the bytes allocated during the
// build. Content is streamed through fixed buffers, so both should be about
// the same for the two trees: peak-10x/1x near 1, not near 10.
func BenchmarkPeakHeap(b *testing.B) {
	small := treeFor(b, gen.Options{Skills: *benchMemSkills, Seed: benchSeed, Scale: 1})
	large := treeFor(b, gen.Options{Skills: *benchMemSkills, Seed: benchSeed, Scale: 10})
	for _, t := range []benchTree{small, large} {
		if _, err := hashFloor(floorFiles(b, t.dir), runtime.GOMAXPROCS(0)); err != nil {
			b.Fatal(err)
		}
	}
	var peak, alloc [2][]float64
	for b.Loop() {
		for i, t := range []benchTree{small, large} {
			p, a, c := measureHeap(b, t.dir)
			checkTree(b, c, t.stats)
			peak[i] = append(peak[i], p)
			alloc[i] = append(alloc[i], a)
		}
	}
	const mib = 1 << 20
	b.ReportMetric(float64(small.stats.Bytes)/mib, "content-MiB-1x")
	b.ReportMetric(float64(large.stats.Bytes)/mib, "content-MiB-10x")
	b.ReportMetric(median(peak[0])/mib, "peak-MiB-1x")
	b.ReportMetric(median(peak[1])/mib, "peak-MiB-10x")
	b.ReportMetric(median(alloc[0])/mib, "alloc-MiB-1x")
	b.ReportMetric(median(alloc[1])/mib, "alloc-MiB-10x")
	b.ReportMetric(median(peak[1])/median(peak[0]), "peak-10x/1x")
}

// measureHeap builds a catalog of dir and returns the peak of live heap
// objects above what was live before, and the bytes allocated meanwhile.
func measureHeap(b *testing.B, dir string) (peak, alloc float64, c *Catalog) {
	b.Helper()
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	read := func() (heap, allocs uint64) {
		metrics.Read(samples)
		return samples[0].Value.Uint64(), samples[1].Value.Uint64()
	}
	runtime.GC()
	base, alloc0 := read()
	var maxHeap atomic.Uint64
	maxHeap.Store(base)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				metrics.Read(s)
				if h := s[0].Value.Uint64(); h > maxHeap.Load() {
					maxHeap.Store(h)
				}
			}
		}
	}()
	c, err := OpenDir(dir, benchOptions())
	heapEnd, alloc1 := read()
	close(done)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	mx := max(maxHeap.Load(), heapEnd)
	runtime.KeepAlive(c)
	return float64(mx - base), float64(alloc1 - alloc0), c
}

func TestFrontmatterOf(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"---\nname: a\n---\nbody\n", "name: a\n"},
		{"\xEF\xBB\xBF---\r\nname: a\r\n--- \r\nbody", "name: a\r\n"},
		{"---\nname: a\n---", "name: a\n"},
		{"---\nname: a\n", ""},
		{"name: a\n", ""},
	} {
		if got := string(frontmatterOf([]byte(tt.in))); got != tt.want {
			t.Errorf("frontmatterOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
