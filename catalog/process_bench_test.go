//go:build linux

package catalog

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog/internal/gen"
	"github.com/skillport/skillport/internal/skilltest"
)

var benchValidateSkills = flag.Int("catalog.validateskills", 60_000, "top-level skills in the real-world tree BenchmarkProcesses validates")

// BenchmarkProcesses runs the skillport binary the way users do, on
// real-world trees (gen.Options.RealWorld), and reports, beside the
// WalkDir+read+hash floor of the same tree measured right before:
//
//   - serve: the time from exec to the "serving N skills" line (ready-s,
//     and x-walkfloor, its ratio to the floor; target ≤ 1.5), the RSS once
//     ready (serve-rss-MB: serve answers before it packs its first catalog
//     and gives the build's garbage back, so this is a transient figure),
//     on a tree of -catalog.realskills skills (20,000), once settled
//     (serve-rss-settled-MB: after the packed copy is swapped in and the
//     watcher's first reload, when the RSS has stopped changing; target
//     ≤ 150), and its peak RSS by then (serve-rss-peak-MB);
//   - validate: the wall time (validate-s; target ≤ 5 on the real
//     61,452-skill registry, whose files are far smaller than these) and its
//     ratio to the floor (validate-x-walkfloor), and peak RSS
//     (validate-maxrss-MB; target ≤ 300) on -catalog.validateskills
//     skills (60,000).
//
// Both run with --allow-hardlinks, so that every skill is published.
func BenchmarkProcesses(b *testing.B) {
	bin := skilltest.Binary(b)
	serveTree := treeFor(b, gen.Options{Skills: *benchRealSkills, Seed: benchSeed, Scale: 1, RealWorld: true})
	validateTree := treeFor(b, gen.Options{Skills: *benchValidateSkills, Seed: benchSeed, Scale: 1, RealWorld: true})
	workers := runtime.GOMAXPROCS(0)
	for _, t := range []benchTree{serveTree, validateTree} { // warm the page cache
		if _, err := walkFloor(t.dir, workers); err != nil {
			b.Fatal(err)
		}
	}
	var ready, rss, settled, peaks, ratios, vtime, vrss, vratios []float64
	for b.Loop() {
		runtime.GC()
		t0 := time.Now()
		if _, err := walkFloor(serveTree.dir, workers); err != nil {
			b.Fatal(err)
		}
		floor := time.Since(t0)
		r, mem, later, peak := serveReady(b, bin, serveTree)
		ready = append(ready, r.Seconds())
		rss = append(rss, mem)
		settled = append(settled, later)
		peaks = append(peaks, peak)
		ratios = append(ratios, float64(r)/float64(floor))

		runtime.GC()
		t0 = time.Now()
		if _, err := walkFloor(validateTree.dir, workers); err != nil {
			b.Fatal(err)
		}
		vfloor := time.Since(t0)
		t0 = time.Now()
		cmd := exec.Command(bin, "validate", "--allow-hardlinks", validateTree.dir)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			b.Fatalf("validate: %v\n%s", err, tail(out.String()))
		}
		vtime = append(vtime, time.Since(t0).Seconds())
		vratios = append(vratios, float64(time.Since(t0))/float64(vfloor))
		vrss = append(vrss, float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)/1024)
		want := strconv.Itoa(validateTree.stats.Skills) + " skills valid, 0 invalid"
		if !strings.Contains(out.String(), want) {
			b.Fatalf("validate printed %q, want %q", tail(out.String()), want)
		}
	}
	b.ReportMetric(median(ready), "ready-s")
	b.ReportMetric(median(ratios), "x-walkfloor")
	b.ReportMetric(median(rss), "serve-rss-MB")
	b.ReportMetric(median(settled), "serve-rss-settled-MB")
	b.ReportMetric(median(peaks), "serve-rss-peak-MB")
	b.ReportMetric(float64(serveTree.stats.Skills), "serve-skills")
	b.ReportMetric(median(vtime), "validate-s")
	b.ReportMetric(median(vratios), "validate-x-walkfloor")
	b.ReportMetric(median(vrss), "validate-maxrss-MB")
	b.ReportMetric(float64(validateTree.stats.Skills), "validate-skills")
}

var servingRE = regexp.MustCompile(`serving (\d+) skills?`)

// serveReady starts skillport serve on t and returns the time to its
// "serving" line, its RSS then, its RSS once settled, and its peak RSS
// (VmHWM) by then, in MB.
func serveReady(b *testing.B, bin string, t benchTree) (time.Duration, float64, float64, float64) {
	cmd := exec.Command(bin, "serve", "--http", "127.0.0.1:0", "--allow-hardlinks", t.dir)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	sc := bufio.NewScanner(pipe)
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		if m := servingRE.FindStringSubmatch(line); m != nil {
			ready := time.Since(t0)
			if m[1] != strconv.Itoa(t.stats.Skills) {
				b.Fatalf("serve published %s skills, the tree has %d", m[1], t.stats.Skills)
			}
			status := func(field string) float64 {
				status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
				if err != nil {
					b.Fatal(err)
				}
				return statusMB(status, field)
			}
			rss := func() float64 { return status("VmRSS:") }
			first := rss()
			// The watcher rebuilds once right away (whatever changed before
			// the watch began raised no event): settled is the RSS once it
			// has not changed for two seconds, at least three after ready.
			last, same := first, 0
			for i := 0; i < 240 && (i < 6 || same < 4); i++ {
				time.Sleep(500 * time.Millisecond)
				if now := rss(); now == last {
					same++
				} else {
					last, same = now, 0
				}
			}
			return ready, first, last, status("VmHWM:")
		}
		lines = append(lines, line)
	}
	b.Fatalf("serve exited before serving:\n%s", tail(strings.Join(lines, "\n")))
	return 0, 0, 0, 0
}

// statusMB reads a "kB" field of /proc/PID/status, in MB.
func statusMB(status []byte, field string) float64 {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
