package e2e_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/server"
	"github.com/skillport/skillport/skill"
)

// inProcess starts n servers over examples and returns one origin per server.
func inProcess(b *testing.B, cat *catalog.Catalog, n int) ([]host.Origin, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var out []host.Origin
	for i := range n {
		s, _, err := server.New(nil, server.NewCatalogSource(cat), &server.Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		ct, st := mcp.NewInMemoryTransports()
		go s.Run(ctx, st)
		out = append(out, host.Origin{Label: fmt.Sprintf("s%d", i), Transport: ct})
	}
	return out, cancel
}

// discover runs one discovery and returns its wall time and the longest
// Discovery any origin reported inside it.
func discover(b *testing.B, origins []host.Origin) (wall, slowest time.Duration) {
	start := time.Now()
	h, err := host.New(origins, &host.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Connect(context.Background()); err != nil {
		b.Fatal(err)
	}
	wall = time.Since(start)
	for _, o := range h.Origins() {
		if o.Err != nil {
			b.Fatal(o.Err)
		}
		slowest = max(slowest, o.Discovery)
	}
	h.Close()
	return wall, slowest
}

// cpuTime is the CPU this process and its reaped children have used.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// benchDiscovery discovers n servers at once, then the same kind of server
// alone `singles` times, and reports:
//
//   - ratio: the n-server time over the slowest single server discovered
//     alone, the target (<= 1.3). It can only hold when a server's
//     discovery is mostly waiting; when it is CPU (in process the servers
//     run on the host's cores; subprocesses start a Go runtime each), n
//     servers need n times the CPU of one.
//   - cpu-busy: the share of the machine's cores (GOMAXPROCS) busy during
//     the n-server run, from getrusage of this process and its children.
//     Near 1 the run was CPU-bound, and nothing in the host can make it
//     faster than the machine.
//   - ratio-in-run: the n-server time over the slowest origin's own
//     Discovery inside the same run: what the host adds on top of its
//     slowest server (1.0 is nothing; serialising origins would give n).
func benchDiscovery(b *testing.B, n, singles int, mk func(n int) ([]host.Origin, func())) {
	var all, inRun, alone, cpu time.Duration
	for b.Loop() {
		origins, stop := mk(n)
		c0 := cpuTime()
		w, s := discover(b, origins)
		cpu += cpuTime() - c0
		stop()
		all += w
		inRun += s
		var worst time.Duration
		for range singles {
			one, stop := mk(1)
			if d, _ := discover(b, one); d > worst {
				worst = d
			}
			stop()
		}
		alone += worst
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
	b.ReportMetric(per(all), "ms-20-servers")
	b.ReportMetric(per(alone), "ms-slowest-single")
	b.ReportMetric(float64(all)/float64(alone), "ratio")
	b.ReportMetric(float64(cpu)/float64(all)/float64(runtime.GOMAXPROCS(0)), "cpu-busy")
	b.ReportMetric(float64(all)/float64(inRun), "ratio-in-run")
}

// BenchmarkDiscovery20 measures discovery (connect, initialize and every
// skills/list page) across 20 servers at once against the same servers
// discovered alone, in the same run. Target (issue 4): ratio <= 1.3; see
// benchDiscovery for the other two figures.
func BenchmarkDiscovery20(b *testing.B) {
	cat, err := catalog.OpenDir(examples, &catalog.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	local := func(n int) ([]host.Origin, func()) { return inProcess(b, cat, n) }
	// With latency on every message, as on a network, a server's discovery
	// is mostly waiting, which is what concurrency can overlap.
	remote := func(d time.Duration) func(n int) ([]host.Origin, func()) {
		return func(n int) ([]host.Origin, func()) {
			os, stop := inProcess(b, cat, n)
			for i := range os {
				os[i].Transport = &latency{inner: os[i].Transport, d: d}
			}
			return os, stop
		}
	}
	bin := filepath.Join(b.TempDir(), "skillport")
	if out, err := runGo("build", "-o", bin, "github.com/skillport/skillport/cmd/skillport"); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	dir, _ := filepath.Abs(examples)
	sub := func(n int) ([]host.Origin, func()) {
		var out []host.Origin
		for i := range n {
			out = append(out, host.Origin{Label: fmt.Sprintf("p%d", i), Command: bin, Args: []string{"serve", "--watch=false", "--log-level", "error", dir}})
		}
		return out, func() {}
	}
	// Each case at the runtime's default GC setting (an embedding program
	// that sets nothing) and at 400 (what skillport's host commands run
	// with, cmd/skillport/gc.go).
	for _, gc := range []int{100, 400} {
		suffix := ""
		if gc != 100 {
			suffix = fmt.Sprintf("-gc%d", gc)
		}
		run := func(name string, singles int, mk func(n int) ([]host.Origin, func())) {
			b.Run(name+suffix, func(b *testing.B) {
				defer debug.SetGCPercent(debug.SetGCPercent(gc))
				benchDiscovery(b, 20, singles, mk)
			})
		}
		run("in-process", 20, local)
		run("in-process-2ms-latency", 5, remote(2*time.Millisecond))
		run("in-process-20ms-latency", 5, remote(20*time.Millisecond))
		run("in-process-50ms-latency", 3, remote(50*time.Millisecond))
		run("subprocess", 5, sub)
	}
}

// BenchmarkVerifiedLoad6 loads a 6-file skill (SKILL.md, then its five
// supporting files) through the host, and in the same run measures the six
// resources/read round trips alone and the verification work alone (size,
// SHA-256, frontmatter parse and field-by-field comparison) over the same
// bytes. Target (issue 4): verification <= 10% of the round trips.
func BenchmarkVerifiedLoad6(b *testing.B) {
	dir := b.TempDir()
	sk := filepath.Join(dir, "bench-skill")
	body := "---\nname: bench-skill\ndescription: A skill used to measure verified loading\nlicense: Apache-2.0\nmetadata:\n  version: \"1.0\"\n---\n\n" + strings.Repeat("Instructions line for the benchmark skill.\n", 100)
	files := map[string]string{"SKILL.md": body}
	for i, size := range []int{2 << 10, 8 << 10, 16 << 10, 4 << 10, 32 << 10} {
		files[fmt.Sprintf("references/ref%d.md", i)] = strings.Repeat("x", size-1) + "\n"
	}
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(sk, p)), 0o755)
		os.WriteFile(filepath.Join(sk, p), []byte(c), 0o644)
	}
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: quiet})
	if err != nil || len(cat.Skills()) != 1 || len(cat.Skills()[0].Files) != 6 {
		b.Fatalf("bench skill: %v", err)
	}
	b.Run("in-process", func(b *testing.B) {
		origins, stop := inProcess(b, cat, 1)
		defer stop()
		raw, stop2 := inProcess(b, cat, 1)
		defer stop2()
		benchLoad(b, origins[0], raw[0].Transport)
	})
	b.Run("http-loopback", func(b *testing.B) {
		s, _, err := server.New(nil, server.NewCatalogSource(cat), &server.Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		defer ts.Close()
		benchLoad(b, host.Origin{Label: "http", URL: ts.URL}, &mcp.StreamableClientTransport{Endpoint: ts.URL})
	})
}

func benchLoad(b *testing.B, origin host.Origin, rawTransport mcp.Transport) {
	h, err := host.New([]host.Origin{origin}, &host.Options{Logger: quiet, Approver: allow()})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	if err := h.Connect(ctx); err != nil {
		b.Fatal(err)
	}
	e := h.Skills()[0]
	// A plain client, without verification, for the raw round trips.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "raw"}, nil).Connect(ctx, rawTransport, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()

	var loadT, rttT, verifyT time.Duration
	var data [][]byte
	for b.Loop() {
		start := time.Now()
		l, err := h.Load(ctx, e)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 5 {
			if _, err := l.ReadFile(ctx, fmt.Sprintf("references/ref%d.md", i)); err != nil {
				b.Fatal(err)
			}
		}
		loadT += time.Since(start)

		start = time.Now()
		data = data[:0]
		for _, f := range e.Files {
			r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: f.URI})
			if err != nil {
				b.Fatal(err)
			}
			data = append(data, []byte(r.Contents[0].Text))
		}
		rttT += time.Since(start)

		start = time.Now()
		for i, f := range e.Files {
			d := data[i]
			if int64(len(d)) != f.Size {
				b.Fatal("size")
			}
			sum := sha256.Sum256(d)
			if fmt.Sprintf("sha256:%x", sum) != f.Digest {
				b.Fatal("digest")
			}
			if f.URI == e.URI {
				doc, err := skill.Parse(d)
				if err != nil || len(e.Frontmatter.Diff(doc.Frontmatter)) != 0 {
					b.Fatal("frontmatter")
				}
			}
		}
		verifyT += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(loadT)/n/1e3, "µs-verified-load")
	b.ReportMetric(float64(rttT)/n/1e3, "µs-6-round-trips")
	b.ReportMetric(float64(verifyT)/n/1e3, "µs-verification")
	b.ReportMetric(100*float64(verifyT)/float64(rttT), "%-verify-of-rtt")
}

// latency delivers every message a server sends d after it was sent, as a
// network does: messages in flight together arrive together (a reader that
// slept d per message would charge pipelined messages one after another).
type latency struct {
	inner mcp.Transport
	d     time.Duration
}

func (l *latency) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := l.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc := &slowConn{Connection: c, d: l.d, in: make(chan arrival, 64)}
	go sc.pump()
	return sc, nil
}

type arrival struct {
	m   jsonrpc.Message
	err error
	at  time.Time
}

type slowConn struct {
	mcp.Connection
	d  time.Duration
	in chan arrival
}

// pump reads ahead, like a socket buffer, stamping each message with when
// it may be delivered.
func (c *slowConn) pump() {
	for {
		m, err := c.Connection.Read(context.Background())
		c.in <- arrival{m, err, time.Now().Add(c.d)}
		if err != nil {
			return
		}
	}
}

func (c *slowConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case a := <-c.in:
		time.Sleep(time.Until(a.at))
		if a.err != nil {
			c.in <- a // every later Read sees the end too
		}
		return a.m, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
