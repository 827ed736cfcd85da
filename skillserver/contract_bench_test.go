package skillserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/skillserver"
)

// BenchmarkFromSkills measures what answering from a custom source costs
// per request: a source that notifies changes is listed once per caller
// and change, one that does not is listed (and its files and directories
// derived) on every request. It reports both, measured in the same run,
// and their ratio.
func BenchmarkFromSkills(b *testing.B) {
	g := &groupSource{byGroup: map[string][]*catalog.Skill{}, content: map[string][]byte{}}
	for i := range 200 {
		name := fmt.Sprintf("s%03d", i)
		sk, err := catalog.NewSkill("skill://team/"+name, map[string][]byte{
			"SKILL.md": md(name), "references/a.md": []byte("a"), "scripts/run.sh": []byte("echo"),
		})
		if err != nil {
			b.Fatal(err)
		}
		g.byGroup[""] = append(g.byGroup[""], sk)
	}
	plain, cached := skillserver.FromSkills(g), skillserver.FromSkills(notifyingSource{g})
	ctx := context.Background()
	var dPlain, dCached time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := plain.View(ctx, nil, nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := cached.View(ctx, nil, nil); err != nil {
			b.Fatal(err)
		}
		dPlain += t1.Sub(t0)
		dCached += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(dPlain.Nanoseconds())/float64(n), "listing-ns/req")
	b.ReportMetric(float64(dCached.Nanoseconds())/float64(n), "cached-ns/req")
	b.ReportMetric(float64(dPlain)/float64(dCached), "listing/cached")
}
