package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// machineUsed is the machine's memory in use (MemTotal - MemAvailable).
func machineUsed() int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	var total, avail int64
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "MemTotal:":
			total = n << 10
		case "MemAvailable:":
			avail = n << 10
		}
	}
	return total - avail
}

// sandboxProcs counts the processes of uid 65534, the sandboxes' user.
func sandboxProcs() int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err == nil && strings.Contains(string(b), "\nUid:\t65534\t") {
			n++
		}
	}
	return n
}

// BenchmarkConcurrentBudget starts 10 runs at once, each forking 8
// processes that fill 400 MiB, the shape that held 2.65 GB per run and 620
// processes with per-process limits only, and reports:
//
//   - machine-peak-MiB: the most memory the machine had in use above its
//     level before the runs (sampled every 20 ms; other load on the machine
//     shows up too);
//   - budget-MiB: MaxRuns times Limits.MemoryBytes, the documented bound;
//   - ratio: machine-peak over budget, at most about 1;
//   - run-peak-max-MiB: the largest peak a single run's group recorded;
//   - procs-max: the most sandbox processes seen at once;
//   - busy: runs refused with ErrBusy.
func BenchmarkConcurrentBudget(b *testing.B) {
	for _, maxRuns := range []int{4, 10} {
		b.Run("MaxRuns="+strconv.Itoa(maxRuns), func(b *testing.B) {
			const memory = 512 << 20
			r, err := New(&Options{MaxRuns: maxRuns, Limits: Limits{MemoryBytes: memory, WallClock: 60 * time.Second}})
			if err != nil || r.cg == nil {
				b.Fatalf("needs a sandbox with a control group: %v %v", err, r)
			}
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "hogs.py"), []byte(hogs(8, 400)), 0o644); err != nil {
				b.Fatal(err)
			}
			os.Chmod(dir, 0o755)
			for d := dir; d != "/"; d = filepath.Dir(d) {
				os.Chmod(d, 0o755)
			}
			var peak, runPeak atomic.Int64
			var procs, busy atomic.Int64
			for b.Loop() {
				base := machineUsed()
				stop := make(chan struct{})
				sampled := make(chan struct{})
				go func() {
					defer close(sampled)
					for {
						if d := machineUsed() - base; d > peak.Load() {
							peak.Store(d)
						}
						if n := int64(sandboxProcs()); n > procs.Load() {
							procs.Store(n)
						}
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}()
				var wg sync.WaitGroup
				for range 10 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						res, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: "hogs.py"})
						switch {
						case errors.Is(err, ErrBusy):
							busy.Add(1)
						case err != nil:
							b.Error(err)
						case res.PeakMemoryBytes > runPeak.Load():
							runPeak.Store(res.PeakMemoryBytes)
						}
					}()
				}
				wg.Wait()
				close(stop)
				<-sampled
			}
			budget := int64(maxRuns) * memory
			b.ReportMetric(float64(peak.Load())/(1<<20), "machine-peak-MiB")
			b.ReportMetric(float64(budget)/(1<<20), "budget-MiB")
			b.ReportMetric(float64(peak.Load())/float64(budget), "ratio")
			b.ReportMetric(float64(runPeak.Load())/(1<<20), "run-peak-max-MiB")
			b.ReportMetric(float64(procs.Load()), "procs-max")
			b.ReportMetric(float64(busy.Load())/float64(b.N), "busy")
		})
	}
}
