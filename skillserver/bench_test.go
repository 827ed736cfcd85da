package skillserver_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/peers"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

var httpDuration = flag.Duration("serverbench.duration", 5*time.Second, "how long BenchmarkHTTPMixed drives each server (the issue's figure is 30s)")

// pipeSession connects a go-sdk client to s over a pair of OS pipes, the
// same framing and syscalls as a stdio server.
func pipeSession(tb testing.TB, s *mcp.Server) *mcp.ClientSession {
	tb.Helper()
	sr, cw, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cr, sw, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	ss, err := s.Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: sw}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
	for _, m := range []string{wire.MethodListSkills} {
		mcp.AddSendingCustomMethod[*wire.ListSkillsParams, *wire.ListSkillsResult](c, m)
	}
	mcp.AddSendingCustomMethod[*wire.GetSkillParams, *wire.GetSkillResult](c, wire.MethodGetSkill)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// readPair sets up our server and a bare go-sdk server serving the same
// 8 KiB SKILL.md from memory, each behind its own pipe session.
func readPair(b *testing.B) (ours, bare *mcp.ClientSession, uri string) {
	s, floor, uri := readServers(b)
	return pipeSession(b, s), pipeSession(b, floor), uri
}

func readServers(b *testing.B) (ours, bare *mcp.Server, uri string) {
	body := skillMD("bench", "An 8 KiB skill for the read benchmark")
	body += strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n", (8<<10-len(body))/57+1)
	body = body[:8<<10]
	dir := writeTree(b, b.TempDir(), map[string]string{"bench/SKILL.md": body})
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	s, _, err := skillserver.New(nil, published.NewCatalogSource(cat), &skillserver.Options{TTL: -1, Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	uri = "skill://bench/SKILL.md"
	floor := mcp.NewServer(&mcp.Implementation{Name: "bare"}, nil)
	floor.AddResource(&mcp.Resource{URI: uri, Name: "bench", MIMEType: "text/markdown"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: body}}}, nil
	})
	return s, floor, uri
}

// BenchmarkReadSequential reads an 8 KiB SKILL.md over OS pipes, one
// request at a time, alternating between our server and a bare go-sdk
// server serving the same bytes from memory, and reports both and their ratio.
func BenchmarkReadSequential(b *testing.B) {
	ours, bare, uri := readPair(b)
	ctx := context.Background()
	p := &mcp.ReadResourceParams{URI: uri}
	var tOurs, tBare time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if _, err := bare.ReadResource(ctx, p); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := ours.ReadResource(ctx, p); err != nil {
			b.Fatal(err)
		}
		tOurs += time.Since(t1)
		tBare += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tOurs.Nanoseconds())/n, "ours-ns/read")
	b.ReportMetric(float64(tBare.Nanoseconds())/n, "bare-ns/read")
	b.ReportMetric(float64(tOurs)/float64(tBare), "ours/bare")
}

// rawPipe is a minimal newline-delimited JSON-RPC client over OS pipes, so
// that the read benchmarks measure the servers rather than a client stack.
type rawPipe struct {
	w  *os.File
	r  *bufio.Reader
	id int
}

func rawPipeClient(tb testing.TB, s *mcp.Server) *rawPipe {
	tb.Helper()
	sr, cw, _ := os.Pipe()
	cr, sw, _ := os.Pipe()
	ss, err := s.Connect(context.Background(), &mcp.IOTransport{Reader: sr, Writer: sw}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cw.Close(); ss.Close() })
	c := &rawPipe{w: cw, r: bufio.NewReaderSize(cr, 1<<20)}
	c.roundTrip(tb, `"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"0"}}`)
	fmt.Fprintf(cw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return c
}

func (c *rawPipe) send(body string) {
	c.id++
	fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%d,%s}`+"\n", c.id, body)
}

func (c *rawPipe) recv(tb testing.TB) {
	line, err := c.r.ReadSlice('\n')
	if err != nil || !strings.Contains(string(line[:min(len(line), 64)]), `"result"`) {
		tb.Fatalf("bad response %.200s: %v", line, err)
	}
}

func (c *rawPipe) roundTrip(tb testing.TB, body string) {
	c.send(body)
	c.recv(tb)
}

// BenchmarkReadSequentialRaw is BenchmarkReadSequential with a minimal
// client, so that the ratio compares the two server stacks alone.
func BenchmarkReadSequentialRaw(b *testing.B) {
	s, floor, uri := readServers(b)
	ours, bare := rawPipeClient(b, s), rawPipeClient(b, floor)
	body := `"method":"resources/read","params":{"uri":"` + uri + `"}`
	var tOurs, tBare time.Duration
	for b.Loop() {
		t0 := time.Now()
		bare.roundTrip(b, body)
		t1 := time.Now()
		ours.roundTrip(b, body)
		tOurs += time.Since(t1)
		tBare += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tOurs.Nanoseconds())/n, "ours-ns/read")
	b.ReportMetric(float64(tBare.Nanoseconds())/n, "bare-ns/read")
	b.ReportMetric(float64(tOurs)/float64(tBare), "ours/bare")
}

// BenchmarkReadPipelinedRaw writes 8 requests before reading 8 responses.
func BenchmarkReadPipelinedRaw(b *testing.B) {
	s, floor, uri := readServers(b)
	ours, bare := rawPipeClient(b, s), rawPipeClient(b, floor)
	body := `"method":"resources/read","params":{"uri":"` + uri + `"}`
	const inFlight = 8
	batch := func(c *rawPipe) {
		for range inFlight {
			c.send(body)
		}
		for range inFlight {
			c.recv(b)
		}
	}
	var tOurs, tBare time.Duration
	for b.Loop() {
		t0 := time.Now()
		batch(bare)
		t1 := time.Now()
		batch(ours)
		tOurs += time.Since(t1)
		tBare += t1.Sub(t0)
	}
	n := float64(b.N * inFlight)
	b.ReportMetric(n/tOurs.Seconds(), "ours-reads/s")
	b.ReportMetric(n/tBare.Seconds(), "bare-reads/s")
	b.ReportMetric(float64(tOurs)/float64(tBare), "ours/bare-time")
}

// BenchmarkReadPipelined keeps 8 reads in flight on one session, for our
// server and the bare one in alternating rounds, and reports the throughput
// of each and their ratio.
func BenchmarkReadPipelined(b *testing.B) {
	ours, bare, uri := readPair(b)
	ctx := context.Background()
	const inFlight = 8
	round := func(cs *mcp.ClientSession, n int) time.Duration {
		var wg sync.WaitGroup
		var next atomic.Int64
		start := time.Now()
		for range inFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	var tOurs, tBare time.Duration
	const chunk = 64
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		tBare += round(bare, n)
		tOurs += round(ours, n)
	}
	n := float64(b.N)
	b.ReportMetric(n/tOurs.Seconds(), "ours-reads/s")
	b.ReportMetric(n/tBare.Seconds(), "bare-reads/s")
	b.ReportMetric(float64(tOurs)/float64(tBare), "ours/bare-time")
}

// synthTree writes (once per machine, cached in the temp directory) a
// catalog of n skills with four files each; a third sit under team prefixes.
func synthTree(tb testing.TB, n int) string {
	tb.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("skillport-server-bench-%d-v1", n))
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return dir
	}
	os.RemoveAll(dir)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	filler := strings.Repeat("Step: do the thing carefully, then check the result.\n", 96)
	for i := range n {
		name := fmt.Sprintf("skill-%05d", i)
		rel := name
		if i%3 == 0 {
			rel = fmt.Sprintf("team-%02d/%s", i%40, name)
		}
		base := filepath.Join(dir, filepath.FromSlash(rel))
		writeTree(tb, base, map[string]string{
			"SKILL.md":            skillMD(name, fmt.Sprintf("Synthetic skill %d for benchmarks", i)) + filler[:200+r.IntN(1500)],
			"references/GUIDE.md": filler[:500+r.IntN(3000)],
			"scripts/run.sh":      "#!/bin/sh\necho " + name + "\n",
			"data/table.csv":      strings.Repeat("a,b,c\n", 50+r.IntN(200)),
		})
	}
	os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644)
	return dir
}

// BenchmarkListAll10k pages through skills/list on a 10,000-skill catalog.
func BenchmarkListAll10k(b *testing.B) {
	dir := synthTree(b, 10_000)
	start := time.Now()
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	s, _, err := skillserver.New(nil, published.NewCatalogSource(cat), &skillserver.Options{Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	cs := pipeSession(b, s)
	ctx := context.Background()
	pages, skills := 0, 0
	b.ResetTimer()
	for b.Loop() {
		pages, skills = 0, 0
		cursor := ""
		for {
			res, err := mcp.CallCustomMethod[*wire.ListSkillsParams, *wire.ListSkillsResult](ctx, cs, wire.MethodListSkills, &wire.ListSkillsParams{Cursor: cursor})
			if err != nil {
				b.Fatal(err)
			}
			pages++
			skills += len(res.Skills)
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
	}
	if skills != len(cat.Skills()) {
		b.Fatalf("listed %d skills, want %d", skills, len(cat.Skills()))
	}
	b.ReportMetric(float64(pages), "pages")
	b.ReportMetric(float64(skills), "skills")
	b.ReportMetric(build.Seconds()*1000, "catalog-build-ms")
}

func rssMiB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(data)
	if m == nil {
		return -1
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return float64(kb) / 1024
}

// BenchmarkServeColdStart10k starts `skillport serve --http` on the
// 10,000-skill catalog until it prints its summary line, then reads every
// skill's entry and 2,000 files through it and reports its RSS.
func BenchmarkServeColdStart10k(b *testing.B) {
	dir := synthTree(b, 10_000)
	var total time.Duration
	var rss, rssServed float64
	for b.Loop() {
		start := time.Now()
		cmd := exec.Command(skillportBin, "serve", "--http", "127.0.0.1:0", "--watch=false", "--log-level", "error", dir)
		pipe, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(pipe)
		url := ""
		for sc.Scan() {
			if m := summaryRE.FindStringSubmatch(sc.Text()); m != nil {
				url = m[1]
				break
			}
		}
		total += time.Since(start)
		if url == "" {
			cmd.Process.Kill()
			cmd.Wait()
			b.Fatal("serve printed no summary line")
		}
		rss = rssMiB(cmd.Process.Pid)
		// Serve every entry and a sample of files, then look again.
		cs := httpSession(b, url)
		ctx := context.Background()
		cursor, n := "", 0
		var uris []string
		for {
			res, err := mcp.CallCustomMethod[*wire.ListSkillsParams, *wire.ListSkillsResult](ctx, cs, wire.MethodListSkills, &wire.ListSkillsParams{Cursor: cursor})
			if err != nil {
				b.Fatal(err)
			}
			for _, s := range res.Skills {
				for _, f := range s.Resources.Files {
					uris = append(uris, f.URI)
				}
			}
			n += len(res.Skills)
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
		for i := 0; i < 2000; i++ {
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uris[(i*7919)%len(uris)]}); err != nil {
				b.Fatal(err)
			}
		}
		rssServed = rssMiB(cmd.Process.Pid)
		cs.Close()
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	b.ReportMetric(total.Seconds()*1000/float64(b.N), "ms-to-ready")
	b.ReportMetric(rss, "rss-MiB-ready")
	b.ReportMetric(rssServed, "rss-MiB-after-serving")
}

func httpSession(tb testing.TB, url string) *mcp.ClientSession {
	tb.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
	mcp.AddSendingCustomMethod[*wire.ListSkillsParams, *wire.ListSkillsResult](c, wire.MethodListSkills)
	mcp.AddSendingCustomMethod[*wire.GetSkillParams, *wire.GetSkillResult](c, wire.MethodGetSkill)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		tb.Fatalf("connecting to %s: %v", url, err)
	}
	return cs
}

type loadResult struct {
	requests, errors int
	rps, p50, p99    float64 // p50/p99 in ms
}

// drive runs 32 clients mixing skills/get and resources/read against url.
func drive(b *testing.B, url string, skills []string, files []string, d time.Duration) loadResult {
	const clients = 32
	sessions := make([]*mcp.ClientSession, clients)
	rngs := make([]*rand.Rand, clients)
	for i := range sessions {
		sessions[i] = httpSession(b, url)
		rngs[i] = rand.New(rand.NewPCG(uint64(i), 7))
	}
	res, first := closedLoop(clients, d, func(i int) error {
		cs, r := sessions[i], rngs[i]
		if r.IntN(2) == 0 {
			_, err := mcp.CallCustomMethod[*wire.GetSkillParams, *wire.GetSkillResult](context.Background(), cs, wire.MethodGetSkill, &wire.GetSkillParams{URI: skills[r.IntN(len(skills))]})
			return err
		}
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: files[r.IntN(len(files))]})
		return err
	})
	for _, cs := range sessions {
		cs.Close()
	}
	if first != "" {
		b.Errorf("%s: %d errors, first: %s", url, res.errors, first)
	}
	return res
}

// closedLoop runs n clients, each calling do(client) back to back for d,
// and summarizes the calls that succeeded; it returns the first error's
// text, if any.
func closedLoop(n int, d time.Duration, do func(client int) error) (loadResult, string) {
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := do(i); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	first, _ := firstErr.Load().(string)
	return summarize(lat, int(errs.Load()), time.Since(start)), first
}

// summarize turns the latencies of the requests that succeeded in elapsed
// into throughput and percentiles (in ms).
func summarize(lat []time.Duration, errs int, elapsed time.Duration) loadResult {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	return loadResult{requests: len(lat), errors: errs, rps: float64(len(lat)) / elapsed.Seconds(), p50: pct(0.5), p99: pct(0.99)}
}

// BenchmarkHTTPMixed drives `skillport serve --http` and the TypeScript
// reference server (interop/ts-skills-server.mjs) on the example skills with
// 32 concurrent clients mixing skills/get and resources/read, one after the
// other on the same machine, and reports requests/s, p50 and p99 of each.
// Set -serverbench.duration=30s for the figure.
func BenchmarkHTTPMixed(b *testing.B) {
	cat, err := catalog.OpenDir(examples, &catalog.Options{Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	var skills, files []string
	for _, s := range cat.Skills() {
		skills = append(skills, s.URI)
		for _, f := range s.Files {
			files = append(files, f.URI)
		}
	}
	for b.Loop() {
		ours := serveHTTP(b, examples, "--stateless", "--log-level", "error")
		o := drive(b, ours.URL, skills, files, *httpDuration)
		ts := peers.StartTSServer(b, examples)
		r := drive(b, ts, skills, files, *httpDuration)
		b.Logf("skillport (Go, stateless HTTP): %d requests, %.0f req/s, p50 %.2f ms, p99 %.2f ms, %d errors", o.requests, o.rps, o.p50, o.p99, o.errors)
		b.Logf("TS reference server:            %d requests, %.0f req/s, p50 %.2f ms, p99 %.2f ms, %d errors", r.requests, r.rps, r.p50, r.p99, r.errors)
		b.ReportMetric(o.rps, "ours-req/s")
		b.ReportMetric(o.p50, "ours-p50-ms")
		b.ReportMetric(o.p99, "ours-p99-ms")
		b.ReportMetric(float64(o.errors), "ours-errors")
		b.ReportMetric(r.rps, "ts-req/s")
		b.ReportMetric(r.p50, "ts-p50-ms")
		b.ReportMetric(r.p99, "ts-p99-ms")
		b.ReportMetric(float64(r.errors), "ts-errors")
		b.ReportMetric(o.rps/r.rps, "ours/ts-throughput")
	}
}
