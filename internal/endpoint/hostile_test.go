package endpoint_test

// The attacks of the hostile-load report, run against the skillport
// binary as a user runs it (`skillport serve --http`), on loopback, bounded
// in count and time. They use only HTTP, so they run against any build:
// SKILLPORT_TEST_BIN names a prebuilt binary to attack instead of building
// this tree's.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/skilltest"
)

// skillportBin is the skillport command, built once for the whole run
// ($SKILLPORT_TEST_BIN if set).
func skillportBin(t testing.TB) string {
	t.Helper()
	return skilltest.Binary(t)
}

// process is a running `skillport serve --http`.
type process struct {
	cmd  *exec.Cmd
	Addr string
	URL  string
}

var servingRE = regexp.MustCompile(`at http://([^/\s]+)/mcp`)

func startServe(t testing.TB, dir string, flags ...string) *process {
	t.Helper()
	args := append([]string{"serve", "--http", "127.0.0.1:0", "--watch=false", "--log-level", "error"}, flags...)
	cmd := exec.Command(skillportBin(t), append(args, dir)...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	var seen strings.Builder
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return &process{cmd: cmd, Addr: m[1], URL: "http://" + m[1]}
		}
	}
	t.Fatalf("skillport serve did not start:\n%s", seen.String())
	return nil
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func (p *process) peakRSS(t testing.TB) int64 { return p.status(t, "VmHWM:") }

// rss is the process's resident set now (VmRSS), in bytes.
func (p *process) rss(t testing.TB) int64 { return p.status(t, "VmRSS:") }

// cpu is the CPU time the process has used, user and system.
func (p *process) cpu(t testing.TB) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("reading the server's CPU time: %v", err)
	}
	// Fields after the command name, which ends with the last ')': state
	// is field 3, utime 14 and stime 15, in clock ticks (100 a second).
	_, rest, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func (p *process) status(t testing.TB, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("reading the server's %s: %v", field, err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/PID/status", field)
	return 0
}

func (p *process) ts() *testServer { return &testServer{URL: p.URL, Addr: p.Addr} }

const rssBudget = 200 << 20

// TestHostileServe runs the report's attacks on `skillport serve --http`
// over a 100-skill tree: batches (1,000 and 70,000 requests, no protocol
// header, from clients that do and do not read), a foreign Origin, and
// checks the operability endpoints and --allow-origin; then 200 slow
// clients. The server must refuse each attack clearly, keep answering a
// well-behaved client, and stay under 200 MB of peak RSS.
func TestHostileServe(t *testing.T) {
	p := startServe(t, skillTree(t, 100, 0), "--allow-origin", "https://app.example.com")
	ts := p.ts()
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get(p.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %s, want 200", path, resp.Status)
		}
	}
	for origin, want := range map[string]int{"http://evil.example": 403, "https://app.example.com": 200} {
		if resp, body := post(t, ts, initBody, map[string]string{"Origin": origin}); resp.StatusCode != want {
			t.Errorf("initialize with Origin %s: %s, want %d: %s", origin, resp.Status, want, trunc(body))
		}
	}
	sid := session(t, ts)
	hdr := fmt.Sprintf("Mcp-Session-Id: %s\r\n", sid) // and no MCP-Protocol-Version
	small := batch(1000)
	resp, body := post(t, ts, string(small), map[string]string{"Mcp-Session-Id": sid})
	if resp.StatusCode < 400 {
		// Sending more would cost this machine a gigabyte.
		t.Fatalf("a 1,000-request batch (%d bytes) was answered %s with %d bytes: batches are not refused", len(small), resp.Status, len(body))
	}
	rpcError(t, body)
	big := batch(70000)
	for range 3 { // clients that never read their socket
		rawPost(t, p.Addr, small, hdr)
		rawPost(t, p.Addr, big, hdr)
	}
	resp, body = post(t, ts, string(big), map[string]string{"Mcp-Session-Id": sid})
	if resp.StatusCode < 400 || len(body) > 4096 {
		t.Errorf("a 70,000-request batch (%d bytes) was answered %s with %d bytes", len(big), resp.Status, len(body))
	}
	// 200 slow clients (headers or body a byte a second) for 3 s.
	var wg sync.WaitGroup
	end := time.Now().Add(3 * time.Second)
	for i := range 200 {
		wg.Go(func() { slowClient(p.Addr, i%2 == 0, end) })
	}
	time.Sleep(time.Second)
	// A well-behaved client is still answered.
	resp, body = post(t, ts, `{"jsonrpc":"2.0","id":5,"method":"skills/list","params":{}}`, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("skill-099")) {
		t.Errorf("skills/list after the attack: %s %s", resp.Status, trunc(body))
	}
	wg.Wait()
	if rss := p.peakRSS(t); rss > rssBudget {
		t.Errorf("peak RSS %d MiB, budget %d MiB", rss>>20, rssBudget>>20)
	}
}

// TestHostileServeStateless: the batch is refused with --stateless too,
// where no session id is needed to send it.
func TestHostileServeStateless(t *testing.T) {
	p := startServe(t, skillTree(t, 100, 0), "--stateless")
	resp, body := post(t, p.ts(), string(batch(1000)), nil)
	if resp.StatusCode != http.StatusBadRequest || len(body) > 4096 {
		t.Fatalf("a 1,000-request batch on --stateless: %s with %d bytes, want 400 and a short JSON-RPC error", resp.Status, len(body))
	}
	rpcError(t, body)
	if rss := p.peakRSS(t); rss > rssBudget {
		t.Errorf("peak RSS %d MiB, budget %d MiB", rss>>20, rssBudget>>20)
	}
}

// BenchmarkHostileLoad measures, for the report, the server's peak RSS
// under each attack and the p99 latency of a well-behaved client during
// it, as a ratio to its p99 before the attack in the same run. Each
// attack is bounded in count and time; everything is on loopback.
//
//	go test ./endpoint -run '^$' -bench HostileLoad -benchtime 1x
func BenchmarkHostileLoad(b *testing.B) {
	tree := skillTree(b, 100, 0)
	attacks := []struct {
		name string
		run  func(b *testing.B, p *process, sid string, stop <-chan struct{})
	}{
		{"batch70k-reading", func(b *testing.B, p *process, sid string, stop <-chan struct{}) {
			big := string(batch(70000))
			forEach(4, attackTime, func() { post(b, p.ts(), big, map[string]string{"Mcp-Session-Id": sid}) })
		}},
		{"batch-nonreading", func(b *testing.B, p *process, sid string, stop <-chan struct{}) {
			// 70,000- and 1,000-request batches from clients that never
			// read; at most 400 such connections are held at once.
			bodies := [][]byte{batch(70000), batch(1000)}
			held := make(chan net.Conn, 400)
			var n sync.Mutex
			i := 0
			forEach(4, attackTime, func() {
				n.Lock()
				body := bodies[i%2]
				i++
				n.Unlock()
				c, err := net.Dial("tcp", p.Addr)
				if err != nil {
					return
				}
				fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n", p.Addr, sid, len(body))
				c.SetWriteDeadline(time.Now().Add(time.Second))
				c.Write(body)
				select {
				case held <- c:
				default:
					(<-held).Close()
					held <- c
				}
			})
			close(held)
			for c := range held {
				c.Close()
			}
		}},
		{"slow200-30s", func(b *testing.B, p *process, sid string, stop <-chan struct{}) {
			var wg sync.WaitGroup
			end := time.Now().Add(30 * time.Second)
			for i := range 200 {
				wg.Go(func() { slowClient(p.Addr, i%2 == 0, end) })
			}
			wg.Wait()
		}},
	}
	for _, a := range attacks {
		b.Run(a.name, func(b *testing.B) {
			for range b.N {
				p := startServe(b, tree)
				sid := session(b, p.ts())
				base := latencies(b, p, sid, nil, 2*time.Second)
				idle := p.rss(b)
				cpu0, start := p.cpu(b), time.Now()
				stop := make(chan struct{})
				during := make(chan []time.Duration)
				go func() { during <- latencies(b, p, sid, stop, 0) }()
				a.run(b, p, sid, stop)
				close(stop)
				lat := <-during
				b.ReportMetric(float64(p.cpu(b)-cpu0)/float64(time.Since(start)), "server-CPU/wall")
				b.ReportMetric(float64(p.peakRSS(b))/(1<<20), "peak-RSS-MiB")
				b.ReportMetric(float64(p.peakRSS(b))/float64(idle), "peak-RSS/idle")
				b.ReportMetric(float64(p99(lat))/1e6, "p99-ms")
				b.ReportMetric(float64(p99(lat))/float64(p99(base)), "p99/baseline")
				b.ReportMetric(float64(len(lat)), "good-requests")
			}
		})
	}
}

// attackTime is how long each batch attack lasts.
const attackTime = 5 * time.Second

// forEach runs fn in a loop on k goroutines for d.
func forEach(k int, d time.Duration, fn func()) {
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			for time.Now().Before(end) {
				fn()
			}
		})
	}
	wg.Wait()
}

// latencies runs skills/list in a loop until stop closes (or for d) and
// returns each request's latency; a failed request counts as 10 s.
func latencies(b *testing.B, p *process, sid string, stop <-chan struct{}, d time.Duration) []time.Duration {
	var out []time.Duration
	end := time.Now().Add(d)
	// Its own transport: the attackers' connections do not share its pool.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	for {
		if d > 0 && time.Now().After(end) {
			return out
		}
		select {
		case <-stop:
			return out
		default:
		}
		req, _ := http.NewRequest("POST", p.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"skills/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		start := time.Now()
		resp, err := client.Do(req)
		ok := err == nil && resp.StatusCode == 200
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		el := time.Since(start)
		if !ok {
			el = 10 * time.Second
		}
		out = append(out, el)
		time.Sleep(20 * time.Millisecond)
	}
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	return d[(len(d)*99)/100]
}

// slowClient holds a connection until end, sending a request's headers
// (or, with body, its body) one byte a second, and reconnects when cut.
func slowClient(addr string, body bool, end time.Time) {
	for time.Now().Before(end) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var msg string
		if body {
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", addr)
			msg = strings.Repeat(" ", 100000)
		} else {
			msg = "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\n" + strings.Repeat("X-Pad: y\r\n", 10000)
		}
		for i := 0; i < len(msg) && time.Now().Before(end); i++ {
			c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Write([]byte{msg[i]}); err != nil {
				break
			}
			time.Sleep(time.Second)
		}
		c.Close()
	}
}
