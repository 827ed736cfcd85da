package gateway

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/skillserver"
)

// TestCallerViewsBounded: however many distinct callers ask, at most
// maxCallerViews views are kept, and a caller whose view was dropped gets
// the same view again.
func TestCallerViewsBounded(t *testing.T) {
	g, err := New(nil, &host.Options{Logger: slog.New(slog.DiscardHandler)}, &Options{Logger: slog.New(slog.DiscardHandler),
		Visible: func(c *skillserver.Caller, _ *catalog.Skill) bool { return c != nil && c.Subject == "even" },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	e := &host.Entry{Origin: "docs", URI: "skill://pdf/SKILL.md", Name: "pdf", Path: "pdf"}
	v := &view{gen: 7, admitted: []*host.Entry{e}, byKey: map[key]*host.Entry{keyOf(e): e}, entries: []*host.Entry{e}}
	for i := range 10 * maxCallerViews {
		g.viewOf(v, &skillserver.Caller{Subject: fmt.Sprint(i)})
		if n := len(g.views); n > maxCallerViews {
			t.Fatalf("after %d callers, %d views are kept; the bound is %d", i+1, n, maxCallerViews)
		}
	}
	for range 2 {
		if cv := g.viewOf(v, &skillserver.Caller{Subject: "even"}); len(cv.entries) != 1 || cv.entries[0].Qualified != "pdf" {
			t.Fatalf("the caller's view after the cache started over: %+v", cv.entries)
		}
		if cv := g.viewOf(v, &skillserver.Caller{Subject: "odd"}); len(cv.entries) != 0 {
			t.Fatalf("a caller that sees nothing is shown %d skills", len(cv.entries))
		}
	}
}

// BenchmarkCallerView: what a caller's first request after a change costs
// (qualifying its names over the registry) against the cached view every
// later request gets, for 2000 skills of which half share a name.
func BenchmarkCallerView(b *testing.B) {
	g, err := New(nil, &host.Options{Logger: slog.New(slog.DiscardHandler)}, &Options{Logger: slog.New(slog.DiscardHandler),
		Visible: func(c *skillserver.Caller, sk *catalog.Skill) bool { return len(sk.Name)%2 == 0 || c.Subject == "all" },
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	v := &view{gen: 1, byKey: map[key]*host.Entry{}}
	for i := range 2000 {
		name := fmt.Sprintf("skill-%d", i%1000)
		e := &host.Entry{Origin: fmt.Sprintf("o%d", i%2), URI: "skill://" + name + "/SKILL.md", Name: name, Path: name}
		v.admitted = append(v.admitted, e)
		v.entries = append(v.entries, e)
		v.byKey[keyOf(e)] = e
	}
	run := func(fresh bool) float64 {
		start := time.Now()
		for i := range b.N {
			sub := "all"
			if fresh {
				g.views = nil
				sub = fmt.Sprint(i)
			}
			g.viewOf(v, &skillserver.Caller{Subject: sub})
		}
		return float64(time.Since(start).Nanoseconds()) / float64(b.N)
	}
	g.viewOf(v, &skillserver.Caller{Subject: "all"})
	cached := run(false)
	first := run(true)
	b.ReportMetric(first/1e3, "µs/first")
	b.ReportMetric(cached, "ns/cached")
	b.ReportMetric(first/cached, "first/cached")
}
