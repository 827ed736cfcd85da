//go:build linux

package catalog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog/internal/gen"
	"github.com/skillport/skillport/internal/cputime"
	"github.com/skillport/skillport/internal/skilltest"
)

var benchReadySkills = flag.Int("catalog.readyskills", 17_500, "top-level skills in the real-world tree of BenchmarkServeReady (about 18,400 with nested ones)")

// readyInvalid makes one top-level skill in readyInvalid of
// BenchmarkServeReady's tree invalid (gen.Options.Invalid).
const readyInvalid = 100

// BenchmarkServeReady measures what a user pointing skillport serve at a
// large public collection waits for: the time from exec to the first
// answer to skills/list over stdio (ready-s), and the peak RSS until then
// (peak-rss-MB, VmHWM; it fails over readyPeakBound), on a real-world tree
// (gen.Options.RealWorld with invalid skills, about 18,400 SKILL.md and
// 1.2 GB by default: the size of the largest collection served whole),
// beside the WalkDir+read+hash floor of the same tree measured right
// before (walkFloor, warm page cache, the same GOMAXPROCS); x-walkfloor is
// the median ratio, and cpu-x-walkfloor that of the CPU time serve used
// in all (user and system, till it exited on the answer) to the floor's,
// steadier than wall time on a shared machine. Target: x-walkfloor ≤ 1.5.
// The same ratios to parseFloor (x-parsefloor, cpu-x-parsefloor, with
// parsefloor-ns/op) say how much of that the YAML parser costs any
// implementation. It also checks that serve publishes every valid skill
// and refuses exactly the invalid ones.
func BenchmarkServeReady(b *testing.B) {
	bin := skilltest.Binary(b)
	t := treeFor(b, gen.Options{Skills: *benchReadySkills, Seed: benchSeed, Scale: 1, RealWorld: true, Invalid: readyInvalid})
	workers := runtime.GOMAXPROCS(0)
	if n, err := walkFloor(t.dir, workers); err != nil || n != t.stats.Bytes { // and warm the page cache
		b.Fatalf("walk floor read %d bytes (%v), the tree has %d", n, err, t.stats.Bytes)
	}
	var ready, ratios, cpuRatios, parseRatios, parseCPURatios, peaks []float64
	var parseTotal time.Duration
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		t0, cpu0 := time.Now(), cputime.Self()
		if _, err := walkFloor(t.dir, workers); err != nil {
			b.Fatal(err)
		}
		floor, floorCPU := time.Since(t0), cputime.Self()-cpu0
		runtime.GC()
		t0, cpu0 = time.Now(), cputime.Self()
		if _, err := parseFloor(t.dir, workers); err != nil {
			b.Fatal(err)
		}
		parse, parseCPU := time.Since(t0), cputime.Self()-cpu0
		b.StartTimer()
		r, cpu, peak := firstAnswer(b, bin, t)
		if peak > readyPeakBound {
			b.Fatalf("serve peaked at %.0f MB of RSS before its first answer, over the %d MB bound the README gives", peak, readyPeakBound)
		}
		peaks = append(peaks, peak)
		ready = append(ready, r.Seconds())
		ratios = append(ratios, float64(r)/float64(floor))
		cpuRatios = append(cpuRatios, float64(cpu)/float64(floorCPU))
		parseTotal += parse
		parseRatios = append(parseRatios, float64(r)/float64(parse))
		parseCPURatios = append(parseCPURatios, float64(cpu)/float64(parseCPU))
	}
	b.ReportMetric(median(ready), "ready-s")
	b.ReportMetric(median(ratios), "x-walkfloor")
	b.ReportMetric(median(cpuRatios), "cpu-x-walkfloor")
	b.ReportMetric(float64(parseTotal.Nanoseconds())/float64(len(ready)), "parsefloor-ns/op")
	b.ReportMetric(median(parseRatios), "x-parsefloor")
	b.ReportMetric(median(parseCPURatios), "cpu-x-parsefloor")
	b.ReportMetric(median(peaks), "peak-rss-MB")
	b.ReportMetric(float64(t.stats.Skills-t.stats.Invalid), "published")
	b.ReportMetric(float64(t.stats.Invalid), "refused")
}

// readyPeakBound is the peak RSS, in MB, serve may reach building
// BenchmarkServeReady's tree: the README's figure for serve's build (its
// heap may grow to 384 MiB, see cmd/skillport's buildHeapCeiling) with
// room for the runtime and the binary.
const readyPeakBound = 450

// firstAnswer starts skillport serve on t over stdio, sends initialize and
// skills/list at once, and returns the time from exec to the skills/list
// answer, the CPU time the process used, and its peak RSS (VmHWM, in MB)
// on the answer; it ends the process on the answer and checks what it
// published.
func firstAnswer(b *testing.B, bin string, t benchTree) (time.Duration, time.Duration, float64) {
	cmd := exec.Command(bin, "serve", "--allow-hardlinks", t.dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}
`)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	var ready time.Duration
	var peak float64
	for ready == 0 && sc.Scan() {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID == 2 {
			ready = time.Since(t0)
			status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
			if err != nil {
				b.Fatal(err)
			}
			peak = statusMB(status, "VmHWM:")
			if m.Result == nil {
				b.Fatalf("skills/list failed: %s", sc.Text())
			}
		}
	}
	stdin.Close() // EOF ends the session and the process
	if err := cmd.Wait(); err != nil || ready == 0 {
		b.Fatalf("serve: %v, no skills/list answer:\n%s", err, tail(stderr.String()))
	}
	m := servingRE.FindStringSubmatch(stderr.String())
	if want := strconv.Itoa(t.stats.Skills - t.stats.Invalid); m == nil || m[1] != want {
		b.Fatalf("serve did not say it serves %s skills:\n%s", want, tail(stderr.String()))
	}
	return ready, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), peak
}
