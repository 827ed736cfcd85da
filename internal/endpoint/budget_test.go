//go:build unix

// The attacks shrink a socket's receive buffer with setsockopt, a Unix call;
// the endpoint is the same code on every OS.

package endpoint_test

// Two attacks of issue 25 on `skillport serve --http`, bounded in count
// and time, on loopback. Stalled readers (point 2): clients that request a
// large file and never read the answer. Each one used to hold the whole
// encoded response (three copies of a 15 MiB file), so that 100 of them
// took the server past 2 GB; the bytes of large responses in flight are
// now bounded for the whole server, and large contents are encoded as
// they are written. Idle flood (point 6): connections that made one
// request and idle no longer lock others out.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/skillserver"
)

// stalledClients is how many clients stall at once in TestStalledReaders;
// SKILLPORT_STALLED raises it (the target is 1,000).
func stalledClients(t testing.TB) int {
	if s := os.Getenv("SKILLPORT_STALLED"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SKILLPORT_STALLED=%q: want a positive count", s)
		}
		return n
	}
	return 200
}

// stallRSS is the peak RSS allowed to the attacked server; the attack
// stops early past abortRSS, so that a server without the bound does not
// take the machine down before the test fails.
const (
	stallRSS = 400 << 20
	abortRSS = 700 << 20
)

// modernRead is a stateless 2026-07-28 resources/read of uri, as raw
// HTTP/1.1 with its headers, on a keep-alive connection.
func modernRead(addr, uri string) []byte {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"stall","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}},"uri":%q}}`, uri)
	return fmt.Appendf(nil, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: resources/read\r\nMcp-Name: %s\r\nContent-Length: %d\r\n\r\n%s", addr, uri, len(body), body)
}

// legacyRead is a 2025-11-25 resources/read without a session, which a
// --stateless server (a registry replica) answers through go-sdk.
func legacyRead(addr, uri string) []byte {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":%q}}`, uri)
	return fmt.Appendf(nil, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
}

// rawGet downloads the file of uri from the web catalog's /raw/ route.
func rawGet(addr, uri string) []byte {
	return fmt.Appendf(nil, "GET /raw/%s HTTP/1.1\r\nHost: %s\r\n\r\n", strings.TrimPrefix(uri, "skill://"), addr)
}

// stall opens a connection with a 4 KiB receive buffer, sends req and
// never reads; the connection is closed at the end of the test.
func stall(t testing.TB, addr string, req []byte) net.Conn {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil // refused at the connection cap: nothing held
	}
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	c.Write(req)
	return c
}

// TestStalledReaders: stalled clients (200, or SKILLPORT_STALLED) each
// request a 15 MiB file (text and binary, through the thin read path and
// through go-sdk on a --stateless server, and from the web catalog's
// /raw/ route) and never read. The server must
// stay under 400 MB of peak RSS and keep answering a well-behaved client
// within a second.
func TestStalledReaders(t *testing.T) {
	dir := skillTree(t, 3, 15<<20)
	bin := make([]byte, 15<<20)
	rand.Read(bin)
	if err := os.WriteFile(filepath.Join(dir, "skill-001", "big.bin"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	n := stalledClients(t)
	for _, c := range []struct {
		name  string
		flags []string
		req   func(addr, uri string) []byte
	}{
		{"thin-path", nil, modernRead},
		{"stateless-go-sdk", []string{"--stateless"}, legacyRead},
		{"web-raw", nil, rawGet},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startServe(t, dir, append(c.flags, "--max-connections", strconv.Itoa(n+64))...)
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			good := make(chan []time.Duration, 1)
			stop := make(chan struct{})
			go func() { good <- goodClient(p, stop) }()
			var peak int64
			aborted := false
			for i := 0; i < n && !aborted; i++ {
				uri := "skill://skill-000/big.md"
				if i%2 == 1 {
					uri = "skill://skill-001/big.bin"
				}
				if conn := stall(t, p.Addr, c.req(p.Addr, uri)); conn != nil {
					conns = append(conns, conn)
				}
				if i%20 == 19 {
					time.Sleep(100 * time.Millisecond)
					if peak = p.peakRSS(t); peak > abortRSS {
						aborted = true
					}
				}
			}
			// Let every stalled request reach the server.
			for range 30 {
				if p.peakRSS(t) > abortRSS {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			close(stop)
			lat := <-good
			peak = p.peakRSS(t)
			worst := slowest(lat)
			t.Logf("%d stalled clients (%d connected): peak RSS %d MiB; good client: %d requests, slowest %v", n, len(conns), peak>>20, len(lat), worst)
			if aborted {
				t.Errorf("attack stopped after %d stalled clients: peak RSS %d MiB passed %d MiB; the bytes of responses in flight are not bounded", len(conns), peak>>20, abortRSS>>20)
			} else if peak > stallRSS {
				t.Errorf("peak RSS %d MiB with %d stalled clients, budget %d MiB", peak>>20, n, stallRSS>>20)
			}
			if len(lat) == 0 || worst > time.Second {
				t.Errorf("a well-behaved client was answered in %v at worst (%d requests), want within 1s", worst, len(lat))
			}
		})
	}
}

// goodClient reads a small file and lists the skills in a loop until stop
// closes, returning each request's latency (a failure counts as 10 s).
func goodClient(p *process, stop <-chan struct{}) []time.Duration {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	var out []time.Duration
	for i := 0; ; i++ {
		select {
		case <-stop:
			return out
		case <-time.After(50 * time.Millisecond):
		}
		req, _ := http.NewRequest("POST", p.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"good","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}},"uri":"skill://skill-002/SKILL.md"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "resources/read")
		req.Header.Set("Mcp-Name", "skill://skill-002/SKILL.md")
		start := time.Now()
		resp, err := client.Do(req)
		ok := err == nil && resp.StatusCode == 200
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ok = ok && bytes.Contains(body, []byte("Skill number 2"))
		}
		el := time.Since(start)
		if !ok {
			el = 10 * time.Second
		}
		out = append(out, el)
	}
}

func slowest(d []time.Duration) time.Duration {
	var m time.Duration
	for _, x := range d {
		m = max(m, x)
	}
	return m
}

// TestLargeReadsInTurn: with a budget smaller than one answer, large reads
// from several clients are served in turn, each complete and exact, text
// and binary, while a small read is never held back.
func TestLargeReadsInTurn(t *testing.T) {
	dir := skillTree(t, 2, 2<<20)
	bin := make([]byte, 1<<20+1)
	rand.Read(bin)
	if err := os.WriteFile(filepath.Join(dir, "skill-001", "big.bin"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, "skill-000", "big.md"))
	if err != nil {
		t.Fatal(err)
	}
	s, src := skillServer(t, dir)
	h := skillserver.NewHTTPHandler(s, &skillserver.HTTPOptions{Logger: slog.New(slog.DiscardHandler)})
	defer h.Close()
	ts := serveHandler(t, h, src, endpoint.Options{ResponseBudget: 1 << 20})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			uri, want := "skill://skill-000/big.md", map[string]any{"text": string(text)}
			if i%2 == 1 {
				uri, want = "skill://skill-001/big.bin", map[string]any{"blob": base64.StdEncoding.EncodeToString(bin)}
			}
			c, err := net.Dial("tcp", ts.Addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.Write(modernRead(ts.Addr, uri))
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Errorf("read %s: %v", uri, err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			data, _ := bytes.CutPrefix(bytes.TrimSpace(body), []byte("event: message\ndata: "))
			var m struct {
				Result struct {
					Contents []map[string]any `json:"contents"`
				} `json:"result"`
			}
			if err := json.Unmarshal(data, &m); err != nil || len(m.Result.Contents) != 1 {
				t.Errorf("read %s: %s %v: %s", uri, resp.Status, err, trunc(body))
				return
			}
			for k, v := range want {
				if m.Result.Contents[0][k] != v {
					t.Errorf("read %s: %s differs from the file", uri, k)
				}
			}
		})
	}
	resp, body := post(t, ts, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"skill://skill-001/SKILL.md"}}`, map[string]string{"Mcp-Session-Id": session(t, ts), "MCP-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("Skill number 1")) {
		t.Errorf("small read: %s %s", resp.Status, trunc(body))
	}
	wg.Wait()
}

// TestIdleFlood: the report's attack on `skillport serve --http` with its
// default cap: 1,024 connections each make one GET /healthz and then idle
// on keep-alive. Another client must still be served, within a second.
func TestIdleFlood(t *testing.T) {
	p := startServe(t, skillTree(t, 1, 0))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 1024 {
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", p.Addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("idle client %d: %v", len(conns), err)
		}
		resp.Body.Close()
	}
	for i := range 5 {
		start := time.Now()
		resp, err := http.Get(p.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		el := time.Since(start)
		t.Logf("new client %d with 1,024 idle connections open: %s in %v", i, resp.Status, el)
		if resp.StatusCode != 200 || el > time.Second {
			t.Fatalf("new client %d with 1,024 idle connections open: %s in %v, want 200 within 1s", i, resp.Status, el)
		}
		http.DefaultClient.CloseIdleConnections()
	}
}
