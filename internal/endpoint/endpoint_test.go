package endpoint_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// TestBatchRefused sends the batch that amplified one POST into a
// gigabyte: whatever its size and the protocol header, it gets a JSON-RPC
// error and no skills/list is run.
func TestBatchRefused(t *testing.T) {
	ts := serve(t, skillTree(t, 100, 0), endpoint.Options{})
	sid := session(t, ts)
	for _, tc := range []struct {
		name   string
		n      int
		status int
		want   string
	}{
		{"1,000 requests", 1000, http.StatusBadRequest, "batches are not accepted"},
		{"one request", 1, http.StatusBadRequest, "batches are not accepted"},
		{"70,000 requests", 70000, http.StatusRequestEntityTooLarge, "limit of 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, ts, string(batch(tc.n)), map[string]string{"Mcp-Session-Id": sid})
			if resp.StatusCode != tc.status {
				t.Errorf("status %s, want %d", resp.Status, tc.status)
			}
			code, msg := rpcError(t, body)
			if code != -32600 || !strings.Contains(msg, tc.want) {
				t.Errorf("error %d %q, want -32600 containing %q", code, msg, tc.want)
			}
			if len(body) > 512 {
				t.Errorf("the refusal is %d bytes: the batch was answered", len(body))
			}
		})
	}
	// Leading whitespace does not hide a batch.
	resp, _ := post(t, ts, " \n\t"+string(batch(2)), map[string]string{"Mcp-Session-Id": sid})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("batch after whitespace: %s, want 400", resp.Status)
	}
	// A single request still works.
	resp, body := post(t, ts, `{"jsonrpc":"2.0","id":9,"method":"skills/list","params":{}}`, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("skill-099")) {
		t.Errorf("skills/list: %s %s", resp.Status, trunc(body))
	}
}

// TestBodyLimits checks the per-request cap (declared or chunked) and the
// budget shared by every connection's body.
func TestBodyLimits(t *testing.T) {
	ts := serve(t, skillTree(t, 1, 0), endpoint.Options{MaxBodyBytes: 1000, MaxBodyBuffer: 8 << 10})
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`
	resp, body := post(t, ts, big, nil)
	if resp.StatusCode != 413 {
		t.Errorf("declared length over the cap: %s, want 413", resp.Status)
	}
	if _, msg := rpcError(t, body); !strings.Contains(msg, "limit of 1000 bytes") {
		t.Errorf("message %q does not name the limit", msg)
	}
	// Chunked: no length declared, cut while reading.
	req, _ := http.NewRequest("POST", ts.URL+"/mcp", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 413 {
		t.Errorf("chunked body over the cap: %s, want 413", r2.Status)
	}

	// Budget: slow clients each holding most of a body use up 8 KiB
	// together; the next body is refused with 503 instead of buffered.
	part := bytes.Repeat([]byte(" "), 900)
	var held []net.Conn
	for range 12 {
		c, err := net.Dial("tcp", ts.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", ts.Addr)
		c.Write(part)
		held = append(held, c)
	}
	refused := 0
	for _, c := range held {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if b, _ := io.ReadAll(c); bytes.Contains(b, []byte("503 Service Unavailable")) && bytes.Contains(b, []byte("request bodies")) {
			refused++
		}
	}
	if refused == 0 {
		t.Errorf("12 bodies of 1000 bytes were held against a budget of 8 KiB: none refused")
	}
}

// TestOrigin checks that a request whose Origin is present and not allowed
// gets 403, before the MCP handler sees it.
func TestOrigin(t *testing.T) {
	ts := serve(t, skillTree(t, 1, 0), endpoint.Options{AllowOrigins: []string{"https://app.example.com", "HTTP://Other.Example:8080/"}})
	for _, tc := range []struct {
		origin string
		status int
	}{
		{"", 200},
		{"http://evil.example", 403},
		{"null", 403},
		{"https://app.example.com", 200},
		{"https://APP.example.com:443", 200},
		{"http://app.example.com", 403}, // scheme matters
		{"http://other.example:8080", 200},
		{"http://other.example", 403}, // port matters
		{"http://localhost:6274", 200},
		{"http://127.0.0.1:3000", 200},
		{"http://[::1]:3000", 200},
		{"http://localhost.evil.example", 403},
		{ts.URL, 200}, // same origin
	} {
		t.Run(tc.origin, func(t *testing.T) {
			h := map[string]string{}
			if tc.origin != "" {
				h["Origin"] = tc.origin
			}
			resp, body := post(t, ts, initBody, h)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %s, want %d: %s", resp.Status, tc.status, trunc(body))
			}
			if tc.status == 403 {
				if _, msg := rpcError(t, body); !strings.Contains(msg, "--allow-origin") {
					t.Errorf("message %q does not say how to allow the origin", msg)
				}
				if resp.Header.Get("Mcp-Session-Id") != "" {
					t.Errorf("a refused origin got a session")
				}
			}
		})
	}
	// An allowed web page can read the answers: CORS headers, and the
	// preflight answered.
	resp, _ := post(t, ts, initBody, map[string]string{"Origin": "https://app.example.com"})
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://app.example.com" {
		t.Errorf("Access-Control-Allow-Origin %q for an allowed origin", got)
	}
	if !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("the session id header is not exposed to the page")
	}
	pre, _ := http.NewRequest("OPTIONS", ts.URL+"/mcp", nil)
	pre.Header.Set("Origin", "https://app.example.com")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type, mcp-session-id")
	presp, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	presp.Body.Close()
	if presp.StatusCode != 204 || !strings.Contains(presp.Header.Get("Access-Control-Allow-Methods"), "POST") || !strings.Contains(presp.Header.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") {
		t.Errorf("preflight: %s %v", presp.Status, presp.Header)
	}
	pre.Header.Set("Origin", "http://evil.example")
	if presp, err = http.DefaultClient.Do(pre); err != nil {
		t.Fatal(err)
	}
	presp.Body.Close()
	if presp.StatusCode != 403 || presp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from a refused origin: %s %v", presp.Status, presp.Header)
	}
	for _, bad := range []string{"evil.example", "ftp://x", "https://x/path", "https://u@x", "*"} {
		if _, err := endpoint.New(http.NotFoundHandler(), &endpoint.Options{AllowOrigins: []string{bad}}); err == nil {
			t.Errorf("AllowOrigins %q accepted", bad)
		}
	}
}

// TestSlowClients checks that the body, header and idle timeouts close
// connections that hold the server without completing a request.
func TestSlowClients(t *testing.T) {
	const d = 300 * time.Millisecond
	ts := serve(t, skillTree(t, 1, 0), endpoint.Options{BodyTimeout: d, IdleTimeout: d, ReadHeaderTimeout: d})
	closedWithin := func(t *testing.T, c net.Conn, limit time.Duration) []byte {
		t.Helper()
		start := time.Now()
		c.SetReadDeadline(time.Now().Add(limit))
		b, err := io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("connection still open after %s (read %q)", time.Since(start), b)
		}
		return b
	}
	t.Run("slow body", func(t *testing.T) {
		c, _ := net.Dial("tcp", ts.Addr)
		defer c.Close()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"", ts.Addr)
		go func() { // one byte now and then, never the whole body
			for range 20 {
				time.Sleep(100 * time.Millisecond)
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		if b := closedWithin(t, c, 5*d); !bytes.Contains(b, []byte("408")) {
			t.Errorf("slow body answered %q, want 408", b)
		}
	})
	t.Run("slow body to a refused origin", func(t *testing.T) {
		c, _ := net.Dial("tcp", ts.Addr)
		defer c.Close()
		fmt.Fprintf(c, "POST /nowhere HTTP/1.1\r\nHost: %s\r\nOrigin: http://evil.example\r\nContent-Length: 100000\r\n\r\n{", ts.Addr)
		go func() {
			for range 20 {
				time.Sleep(100 * time.Millisecond)
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		closedWithin(t, c, 5*d)
	})
	t.Run("slow headers", func(t *testing.T) {
		c, _ := net.Dial("tcp", ts.Addr)
		defer c.Close()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\n")
		closedWithin(t, c, 5*d)
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c, _ := net.Dial("tcp", ts.Addr)
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", ts.Addr)
		if resp, _ := readResponse(t, c, time.Second); resp.StatusCode != 200 {
			t.Fatalf("healthz: %s", resp.Status)
		}
		c.SetReadDeadline(time.Time{})
		closedWithin(t, c, 5*d)
	})
	t.Run("quiet SSE stream survives", func(t *testing.T) {
		sid := session(t, ts)
		c, _ := net.Dial("tcp", ts.Addr)
		defer c.Close()
		fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n", ts.Addr, sid)
		c.SetReadDeadline(time.Now().Add(5 * d))
		b, err := io.ReadAll(c)
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Fatalf("the quiet SSE stream ended within %s (%v): %q", 5*d, err, b)
		}
		if !bytes.Contains(b, []byte("200 OK")) {
			t.Errorf("stream answered %q", b)
		}
	})
}

// TestNonReadingClient: a client that asks for large responses and never
// reads its socket is cut off by the write timeout, while a well-behaved
// client keeps being answered.
func TestNonReadingClient(t *testing.T) {
	ts := serve(t, skillTree(t, 2, 8<<20), endpoint.Options{WriteTimeout: 300 * time.Millisecond})
	sid := session(t, ts)
	read := `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"skill://skill-000/big.md"}}`
	var conns []net.Conn
	for range 4 {
		hdr := fmt.Sprintf("Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n", session(t, ts))
		c := rawPost(t, ts.Addr, []byte(read), hdr)
		conns = append(conns, c)
	}
	for i := range 5 {
		resp, body := post(t, ts, `{"jsonrpc":"2.0","id":3,"method":"skills/list","params":{}}`, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte("skill-001")) {
			t.Fatalf("well-behaved request %d while others stall: %s %s", i, resp.Status, trunc(body))
		}
	}
	// Wait, reading nothing, until the server has given up on all four.
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(ts.Log.String(), `"rpc_method":"resources/read"`) < len(conns) {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s the server still writes to clients that do not read:\n%s", ts.Log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, line := range strings.Split(ts.Log.String(), "\n") {
		var rec struct {
			RPC      string `json:"rpc_method"`
			BytesOut int64  `json:"bytes_out"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.RPC == "resources/read" && rec.BytesOut >= 8<<20 {
			t.Errorf("a client that does not read was sent its whole response (%d bytes): nothing was cut", rec.BytesOut)
		}
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := io.Copy(io.Discard, c); isTimeout(err) {
			t.Errorf("non-reading client %d: connection still open after its response was abandoned (%d bytes readable)", i, n)
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestPipelinedRequests: requests pipelined on one connection are handled
// one at a time, so a client that sends many and reads none has one
// response in flight.
func TestPipelinedRequests(t *testing.T) {
	ts := serve(t, skillTree(t, 2, 8<<20), endpoint.Options{WriteTimeout: time.Minute})
	hdr := fmt.Sprintf("Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n", session(t, ts))
	c, err := net.Dial("tcp", ts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 20 {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"skill://skill-000/big.md"}}`, 100+i)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n%s\r\n%s", ts.Addr, len(body), hdr, body)
	}
	// Once the first is in flight (an event, not a wait of a second), the
	// others stay queued behind its unread response.
	waitInFlight(t, ts, 1)
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// This scrape, and one of the pipelined requests.
	if !bytes.Contains(b, []byte("\nskillport_http_requests_in_flight 2\n")) {
		_, after, _ := bytes.Cut(b, []byte("\nskillport_http_requests_in_flight "))
		line, _, _ := bytes.Cut(after, []byte("\n"))
		t.Errorf("20 pipelined requests, not read: %q in flight, want 1 and the scrape", line)
	}
}

// TestSessionPOSTs: one session cannot have more than MaxSessionPOSTs
// requests in flight, however many connections it opens; other sessions
// are not affected.
func TestSessionPOSTs(t *testing.T) {
	// The count lives in skillserver's session table, as `serve --http`
	// composes it.
	s, src := skillServer(t, skillTree(t, 2, 8<<20))
	h := skillserver.NewHTTPHandler(s, &skillserver.HTTPOptions{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { h.Close() })
	ts := serveHandler(t, h, src, endpoint.Options{MaxSessionPOSTs: 2, WriteTimeout: time.Minute})
	sid := session(t, ts)
	hdr := fmt.Sprintf("Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n", sid)
	for i := range 2 { // never read: both stay in flight
		rawPost(t, ts.Addr, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"skill://skill-000/big.md"}}`, 100+i), hdr)
	}
	waitInFlight(t, ts, 2)
	list := `{"jsonrpc":"2.0","id":3,"method":"skills/list","params":{}}`
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, body := post(t, ts, list, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
		if resp.StatusCode == http.StatusTooManyRequests {
			if _, msg := rpcError(t, body); !strings.Contains(msg, "2 requests in flight") {
				t.Errorf("refusal %q does not name the limit", msg)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a third request of a session with two in flight: %s, want 429", resp.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	other := session(t, ts)
	if resp, body := post(t, ts, list, map[string]string{"Mcp-Session-Id": other, "MCP-Protocol-Version": "2025-11-25"}); resp.StatusCode != 200 {
		t.Errorf("another session: %s %s", resp.Status, trunc(body))
	}
}

// waitInFlight waits until n requests besides its own scrape are in flight.
func waitInFlight(t *testing.T, ts *testServer, n float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := fams["skillport_http_requests_in_flight"].GetMetric()[0].GetGauge().GetValue() - 1
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v requests in flight after 5s, want %v", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConnectionLimit: beyond MaxConns busy connections, a connection is
// answered 503 with an error naming the limit; closing one frees a place.
func TestConnectionLimit(t *testing.T) {
	ts := serve(t, skillTree(t, 1, 0), endpoint.Options{MaxConns: 3, IdleTimeout: time.Minute})
	var held []net.Conn
	for i := range 3 {
		if i == 2 {
			// Two are busy (the check's own connection is then idle, and
			// yields to the third); a third that has just connected is not
			// idle either.
			waitInFlight(t, ts, 2)
		}
		c, err := net.Dial("tcp", ts.Addr)
		if err != nil {
			t.Fatal(err)
		}
		// Busy: a request whose body is still to come.
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		held = append(held, c)
	}
	c, _ := net.Dial("tcp", ts.Addr)
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := readResponse(t, c, 2*time.Second)
	if resp.StatusCode != 503 {
		t.Fatalf("connection over the limit: %s, want 503", resp.Status)
	}
	if _, msg := rpcError(t, body); !strings.Contains(msg, "limit of concurrent connections") {
		t.Errorf("refusal %q does not name the limit", msg)
	}
	held[0].Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, err := http.Get(ts.URL + "/healthz")
		if err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			break
		}
		if err == nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection accepted after one closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range held[1:] {
		c.Close()
	}
}

// TestIdleConnectionsYield: MaxConns keep-alive connections that made one
// request and then idle do not lock others out: each new client is
// served, in place of one idle connection, which is closed; the others
// stay open and served.
func TestIdleConnectionsYield(t *testing.T) {
	const max, extra = 8, 3
	ts := serve(t, skillTree(t, 1, 0), endpoint.Options{MaxConns: max, IdleTimeout: 2 * time.Minute})
	get := func(c net.Conn) (int, error) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var held []net.Conn
	for range max + extra {
		c, err := net.Dial("tcp", ts.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if code, err := get(c); code != 200 {
			t.Fatalf("client %d with %d connections idle: %d %v, want 200", len(held), len(held), code, err)
		}
		held = append(held, c)
	}
	served := 0
	for _, c := range held {
		if code, _ := get(c); code == 200 {
			served++
		}
	}
	if served != max {
		t.Errorf("%d of %d connections still served, want %d: each new client over the cap closes exactly one idle connection", served, len(held), max)
	}
}

// readySource is a CatalogSource whose backend can be down.
type readySource struct {
	*published.CatalogSource
	err error
}

func (s *readySource) Ready(context.Context) error { return s.err }

// TestOperability checks /healthz, /readyz (with and without a Readier)
// and the metrics exposition, parsed with the Prometheus parser.
func TestOperability(t *testing.T) {
	ts := serve(t, skillTree(t, 100, 0), endpoint.Options{})
	get := func(path string) (int, string) {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	sid := session(t, ts)
	h := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	for range 3 {
		post(t, ts, `{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}`, h)
	}
	post(t, ts, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"skill://nope/SKILL.md"}}`, h)
	for i := range 20 { // attacker-chosen names do not become labels
		post(t, ts, fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"x/%d","params":{}}`, i), h)
	}
	post(t, ts, string(batch(3)), h)
	post(t, ts, initBody, map[string]string{"Origin": "http://evil.example"})

	code, body := get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the exposition: %v\n%s", err, body)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("no metric %s", name)
		}
		for _, m := range f.Metric {
			if matches(m, labels) {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
		t.Fatalf("no %s%v in the exposition", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"skillport_http_requests_total", map[string]string{"method": "POST", "rpc_method": "skills/list", "result": "ok"}, 3},
		{"skillport_http_requests_total", map[string]string{"method": "POST", "rpc_method": "resources/read", "result": "rpc_error"}, 1},
		{"skillport_http_requests_total", map[string]string{"method": "POST", "rpc_method": "other", "result": "client_error"}, 20},
		{"skillport_http_request_duration_seconds", map[string]string{"method": "POST", "rpc_method": "skills/list"}, 3},
		{"skillport_http_refused_total", map[string]string{"reason": "batch"}, 1},
		{"skillport_http_refused_total", map[string]string{"reason": "origin"}, 1},
		{"skillport_mcp_sessions_total", map[string]string{"event": "opened"}, 1},
		{"skillport_snapshot_skills", nil, 100},
		{"skillport_snapshot_files", nil, 100},
		{"skillport_http_requests_in_flight", nil, 1}, // the scrape itself
	} {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if v := value("skillport_snapshot_bytes", nil); v < 100*100 {
		t.Errorf("snapshot bytes %v, want the size of 100 SKILL.md", v)
	}
	if v := value("skillport_http_connections_open", nil); v < 1 {
		t.Errorf("connections open %v, want at least this one", v)
	}
	if fams["process_resident_memory_bytes"] == nil {
		t.Errorf("no process collector in the default registry")
	}
	for _, m := range fams["skillport_http_requests_total"].Metric {
		for _, l := range m.Label {
			if strings.HasPrefix(l.GetValue(), "x/") {
				t.Errorf("a client's method name became a label: %s", l.GetValue())
			}
		}
	}

	// A source that can say its backend is down makes /readyz 503.
	rs := &readySource{CatalogSource: ts.Src, err: errors.New("registry unreachable")}
	ts2 := serveHandler(t, http.NotFoundHandler(), nil, endpoint.Options{Source: rs})
	resp, err := http.Get(ts2.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "registry unreachable") {
		t.Errorf("/readyz with a failing backend: %d %q", resp.StatusCode, b)
	}
	rs.err = nil
	ts3 := serveHandler(t, http.NotFoundHandler(), nil, endpoint.Options{Ready: func(context.Context) error { return errors.New("still discovering") }})
	resp, _ = http.Get(ts3.URL + "/readyz")
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "still discovering") {
		t.Errorf("/readyz with Options.Ready failing: %d %q", resp.StatusCode, b)
	}
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, l := range m.Label {
		if v, ok := labels[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}

// TestAccessLog checks one structured line per request, with what an
// operator needs and nothing secret: no session id, token or body.
func TestAccessLog(t *testing.T) {
	ts := serve(t, skillTree(t, 1, 0), endpoint.Options{})
	sid := session(t, ts)
	before := strings.Count(ts.Log.String(), "\n")
	post(t, ts, `{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{"secretmarker":1}}`, map[string]string{
		"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25", "Authorization": "Bearer tok-SECRET",
	})
	lines := strings.Split(strings.TrimSpace(ts.Log.String()), "\n")
	if len(lines) != before+1 {
		t.Fatalf("%d log lines for one request, want 1:\n%s", len(lines)-before, ts.Log.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"msg": "http request", "method": "POST", "path": "/mcp", "rpc_method": "skills/list", "status": 200.0, "result": "ok"} {
		if rec[k] != v {
			t.Errorf("log field %s = %v, want %v", k, rec[k], v)
		}
	}
	for _, k := range []string{"duration", "bytes_in", "bytes_out", "remote"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("log line lacks %s: %v", k, rec)
		}
	}
	all := ts.Log.String()
	for _, secret := range []string{sid, "tok-SECRET", "secretmarker"} {
		if strings.Contains(all, secret) {
			t.Errorf("the access log contains %q", secret)
		}
	}
}

// TestLimitsOff: a negative value turns a limit off rather than refusing
// everything.
func TestLimitsOff(t *testing.T) {
	ts := serve(t, skillTree(t, 3, 0), endpoint.Options{
		MaxBodyBuffer: -1, MaxSessionPOSTs: -1, MaxConns: -1,
		ReadHeaderTimeout: -1, BodyTimeout: -1, IdleTimeout: -1, WriteTimeout: -1,
	})
	sid := session(t, ts)
	resp, body := post(t, ts, `{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}`, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("skill-002")) {
		t.Errorf("skills/list with the limits off: %s %s", resp.Status, trunc(body))
	}
	if _, err := endpoint.New(http.NotFoundHandler(), &endpoint.Options{MaxBodyBytes: -1}); err == nil {
		t.Errorf("MaxBodyBytes -1 accepted: the body cap cannot be turned off")
	}
}

// TestHandle: a handler mounted next to the MCP one gets the Origin check,
// the metrics and an access-log line under its own pattern.
func TestHandle(t *testing.T) {
	ts := serve(t, skillTree(t, 1, 0), endpoint.Options{})
	ts.EP.Handle("GET /catalog/", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "catalog page") }))
	get := func(path, origin string) (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/catalog/pdf", ""); code != 200 || body != "catalog page" {
		t.Errorf("mounted handler: %d %q", code, body)
	}
	if code, _ := get("/catalog/pdf", "http://evil.example"); code != 403 {
		t.Errorf("mounted handler from a foreign origin: %d, want 403", code)
	}
	get("/nowhere/%1b%5b2Jevil", "")
	logs := ts.Log.String()
	if !strings.Contains(logs, `"path":"/catalog/"`) || !strings.Contains(logs, `"path":"other"`) {
		t.Errorf("access log paths: want the pattern /catalog/ and other for unrouted requests:\n%s", logs)
	}
	if strings.Contains(logs, "evil") || strings.Contains(logs, "nowhere") {
		t.Errorf("the access log carries a request's own path:\n%s", logs)
	}
}
