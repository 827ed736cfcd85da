package gateway

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/server"
)

// TestCallerViewsBounded: however many distinct callers ask, at most
// maxCallerViews views are kept, and a caller whose view was dropped gets
// the same view again.
func TestCallerViewsBounded(t *testing.T) {
	g, err := New(nil, &host.Options{Logger: slog.New(slog.DiscardHandler)}, &Options{Logger: slog.New(slog.DiscardHandler),
		Visible: func(c *server.Caller, _ *catalog.Skill) bool { return c != nil && c.Subject == "even" },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	e := &host.Entry{Origin: "docs", URI: "skill://pdf/SKILL.md", Name: "pdf", Path: "pdf"}
	v := &view{gen: 7, all: []*host.Entry{e}, byKey: map[key]*host.Entry{keyOf(e): e}, entries: []*host.Entry{e}}
	for i := range 10 * maxCallerViews {
		g.viewOf(v, &server.Caller{Subject: fmt.Sprint(i)})
		if n := len(g.views); n > maxCallerViews {
			t.Fatalf("after %d callers, %d views are kept; the bound is %d", i+1, n, maxCallerViews)
		}
	}
	for range 2 {
		if cv := g.viewOf(v, &server.Caller{Subject: "even"}); len(cv.entries) != 1 || cv.entries[0].Qualified != "pdf" {
			t.Fatalf("the caller's view after the cache started over: %+v", cv.entries)
		}
		if cv := g.viewOf(v, &server.Caller{Subject: "odd"}); len(cv.entries) != 0 {
			t.Fatalf("a caller that sees nothing is shown %d skills", len(cv.entries))
		}
	}
}
