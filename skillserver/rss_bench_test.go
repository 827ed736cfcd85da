package skillserver_test

import (
	"encoding/json"
	"flag"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillport/skillport/wire"
)

var (
	rssDuration = flag.Duration("serverbench.rss", 15*time.Second, "how long BenchmarkServeRSSUnderLoad10k drives the server (the issue's figure is 60s)")
	rssFlags    = flag.String("serverbench.rssflags", "", "extra `flags` of skillport serve for BenchmarkServeRSSUnderLoad10k (e.g. --no-fast-path for the baseline)")
)

// BenchmarkServeRSSUnderLoad10k drives `skillport serve --http` on the
// 10,000-skill tree with 32 closed-loop clients (half with a session of
// their own, half stateless 2026-07-28) mixing resources/read of random
// files, skills/get of random skills and skills/list pages, and samples
// the server's RSS twice a second. It reports the first sample under load,
// the last and the largest (target: ≤ 150 MiB and flat), the growth from
// first to last, and req/s, p50 and p99. -serverbench.rss sets the
// duration.
func BenchmarkServeRSSUnderLoad10k(b *testing.B) {
	const clients = 32
	dir := synthTree(b, 10_000)
	for b.Loop() {
		s := serveHTTP(b, dir, append([]string{"--watch=false", "--log-level", "error"}, strings.Fields(*rssFlags)...)...)
		pid := s.cmd.Process.Pid
		// Every skill, file and page cursor, listed once.
		probe := &floorClient{url: s.URL, mode: "stateless", hc: http.DefaultClient}
		var skills, files, cursors []string
		cursor := ""
		for {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			data, err := probe.call(wire.MethodListSkills, params)
			if err != nil {
				b.Fatal(err)
			}
			raw, err := rpcResult(data)
			if err != nil {
				b.Fatal(err)
			}
			var page wire.ListSkillsResult
			if err := json.Unmarshal(raw, &page); err != nil {
				b.Fatal(err)
			}
			for _, sk := range page.Skills {
				skills = append(skills, sk.URI)
				for _, f := range sk.Resources.Files {
					files = append(files, f.URI)
				}
			}
			cursors = append(cursors, cursor)
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
		cs := make([]*floorClient, clients)
		rngs := make([]*rand.Rand, clients)
		for i := range cs {
			mode := "stateless"
			if i%2 == 0 {
				mode = "sessions"
			}
			cs[i] = &floorClient{url: s.URL, mode: mode, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
			rngs[i] = rand.New(rand.NewPCG(uint64(i), 11))
			cs[i].open(b)
		}
		var mu sync.Mutex
		var samples []float64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(500 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if r := rssMiB(pid); r > 0 {
						mu.Lock()
						samples = append(samples, r)
						mu.Unlock()
					}
				}
			}
		}()
		res, first := closedLoop(clients, *rssDuration, func(i int) error {
			c, r := cs[i], rngs[i]
			var data []byte
			var err error
			switch n := r.IntN(10); {
			case n < 7:
				data, err = c.call("resources/read", map[string]any{"uri": files[r.IntN(len(files))]})
			case n < 9:
				data, err = c.call(wire.MethodGetSkill, map[string]any{"uri": skills[r.IntN(len(skills))]})
			default:
				params := map[string]any{}
				if cur := cursors[r.IntN(len(cursors))]; cur != "" {
					params["cursor"] = cur
				}
				data, err = c.call(wire.MethodListSkills, params)
			}
			if err == nil {
				_, err = rpcResult(data)
			}
			return err
		})
		close(stop)
		<-sampled
		tr.CloseIdleConnections()
		if first != "" {
			b.Errorf("%d errors, first: %s", res.errors, first)
		}
		if len(samples) < 2 {
			b.Fatalf("only %d RSS samples", len(samples))
		}
		peak := slices.Max(samples)
		b.Logf("%d skills, %d files: %d requests, %.0f req/s, p50 %.2f ms, p99 %.2f ms; RSS first %.1f MiB, last %.1f MiB, max %.1f MiB over %d samples",
			len(skills), len(files), res.requests, res.rps, res.p50, res.p99, samples[0], samples[len(samples)-1], peak, len(samples))
		b.ReportMetric(samples[0], "rss-first-MiB")
		b.ReportMetric(samples[len(samples)-1], "rss-last-MiB")
		b.ReportMetric(peak, "rss-max-MiB")
		b.ReportMetric(samples[len(samples)-1]-samples[0], "rss-growth-MiB")
		b.ReportMetric(res.rps, "req/s")
		b.ReportMetric(res.p50, "p50-ms")
		b.ReportMetric(res.p99, "p99-ms")
	}
}
