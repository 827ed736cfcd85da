package registry_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/cputime"
	"github.com/skillport/skillport/internal/registry"
)

// BenchmarkPublishScan1k publishes 1,000 skills into an empty database
// with the built-in scanner and without it, alternately, and reports the
// ratio of the two publishes' times (median, lowest, highest): the target
// is ≤ 1.3. Scanning reads every new version's files and runs while the
// publish writes; the transaction waits for it before the metadata.
func BenchmarkPublishScan1k(b *testing.B) {
	tree := cachedTree(b, 1000)
	ctx := context.Background()
	cat := openCat(b, tree, "")
	scanOpts := &registry.PublishOptions{Scan: &registry.ScanOptions{Builtin: true}}
	var ratios, cpuRatios []float64
	var plain, scanned time.Duration
	// CPU time (this process's and the database server's), steadier than
	// wall time on a loaded machine.
	var cpu time.Duration
	publishOnce := func(o *registry.PublishOptions) time.Duration {
		b.StopTimer()
		conn := connect(b, newDB(b))
		if _, err := registry.Migrate(ctx, conn); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c0, db0, t0 := cputime.Self(), serverCPU(conn.PgConn().PID()), time.Now()
		res, err := registry.Publish(ctx, conn, cat, o)
		if err != nil || len(res.Added) != 1000 {
			b.Fatalf("publish: %v", err)
		}
		d := time.Since(t0)
		cpu = cputime.Self() - c0 + cpuSince(db0, serverCPU(conn.PgConn().PID()))
		if o != nil {
			for _, c := range res.Added {
				if len(c.Findings) > 0 {
					b.Fatalf("%s: findings %v on the generated tree", c.Path, c.Findings)
				}
			}
		}
		return d
	}
	i := 0
	for b.Loop() {
		// Alternate which runs first, so that a warmer cache or a burst of
		// load does not favour one side.
		var p, s, pc, sc time.Duration
		if i%2 == 0 {
			p = publishOnce(nil)
			pc = cpu
			s = publishOnce(scanOpts)
			sc = cpu
		} else {
			s = publishOnce(scanOpts)
			sc = cpu
			p = publishOnce(nil)
			pc = cpu
		}
		if pc > 0 {
			cpuRatios = append(cpuRatios, float64(sc)/float64(pc))
		}
		i++
		plain += p
		scanned += s
		ratios = append(ratios, float64(s)/float64(p))
	}
	slices.Sort(ratios)
	b.ReportMetric(plain.Seconds()*1000/float64(b.N), "publish-ms")
	b.ReportMetric(scanned.Seconds()*1000/float64(b.N), "publish+scan-ms")
	b.ReportMetric(ratios[len(ratios)/2], "scan/plain")
	b.ReportMetric(ratios[0], "scan/plain-min")
	b.ReportMetric(ratios[len(ratios)-1], "scan/plain-max")
	if len(cpuRatios) > 0 {
		slices.Sort(cpuRatios)
		b.ReportMetric(cpuRatios[len(cpuRatios)/2], "scan/plain-cpu")
	}
}
