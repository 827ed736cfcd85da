package access_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skillserver"
)

// BenchmarkHiddenVsAbsent probes, as a caller who may not see it, a hidden
// skill's SKILL.md and an absent URI of the same shape with resources/read
// over HTTP, alternating the two so that both meet the same conditions,
// and reports the median and 90th-percentile latency of each and their
// ratios (hidden / absent). Both go through the same code path (the hidden
// skill is not in the caller's view at all), so the ratios stay near 1: a
// prober cannot tell a hidden skill from an absent one by timing.
func BenchmarkHiddenVsAbsent(b *testing.B) {
	const probes = 500
	_, urls := newAuthFixture(b, 1, skillserver.Options{})
	bob, _ := connect(b, urls[0], "tok-bob")
	ctx := context.Background()
	var hidden, absent []time.Duration
	probe := func(uri string) time.Duration {
		start := time.Now()
		if _, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			b.Fatalf("bob read %s", uri)
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for range b.N {
		for range probes {
			hidden = append(hidden, probe("skill://internal/pay/SKILL.md"))
			absent = append(absent, probe("skill://internal/pax/SKILL.md"))
		}
	}
	b.StopTimer()
	q := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds())
	}
	h50, a50, h90, a90 := q(hidden, .5), q(absent, .5), q(hidden, .9), q(absent, .9)
	b.ReportMetric(h50, "hidden-p50-us")
	b.ReportMetric(a50, "absent-p50-us")
	b.ReportMetric(h50/a50, "p50-ratio")
	b.ReportMetric(h90/a90, "p90-ratio")
}
