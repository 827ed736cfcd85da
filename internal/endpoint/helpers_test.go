package endpoint_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// skillTree writes n skills under a new directory, the first with a file
// of bigFile bytes (none when 0), and returns the directory.
func skillTree(t testing.TB, n, bigFile int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("skill-%03d", i)
		md := fmt.Sprintf("---\nname: %s\ndescription: Skill number %d, which does something useful when asked to do it.\n---\n# %s\n\nBody.\n", name, i, name)
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if bigFile > 0 {
		if err := os.WriteFile(filepath.Join(dir, "skill-000", "big.md"), bytes.Repeat([]byte("0123456789abcde\n"), bigFile/16), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// testServer is a real skillport MCP server on loopback behind an
// endpoint.
type testServer struct {
	URL  string // base, e.g. http://127.0.0.1:1234
	Addr string
	EP   *endpoint.Endpoint
	Src  *published.CatalogSource
	Log  *syncBuffer
}

// serve starts an endpoint around a real server of dir on 127.0.0.1 with
// opts (Source and Logger filled in unless set); it stops at the end of
// the test.
func serve(t testing.TB, dir string, opts endpoint.Options) *testServer {
	t.Helper()
	s, src := skillServer(t, dir)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)})
	return serveHandler(t, h, src, opts)
}

// skillServer is a real skillport MCP server of the skills in dir.
func skillServer(t testing.TB, dir string) (*mcp.Server, *published.CatalogSource) {
	t.Helper()
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	src := published.NewCatalogSource(cat)
	s, _, err := skillserver.New(&mcp.Implementation{Name: "test", Version: "0"}, src, &skillserver.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s, src
}

func serveHandler(t testing.TB, h http.Handler, src *published.CatalogSource, opts endpoint.Options) *testServer {
	t.Helper()
	logs := &syncBuffer{}
	if opts.Source == nil && src != nil {
		opts.Source = src
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	}
	ep, err := endpoint.New(h, &opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ep.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testServer{URL: "http://" + ln.Addr().String(), Addr: ln.Addr().String(), EP: ep, Src: src, Log: logs}
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// post sends one JSON-RPC body to /mcp and returns the response with its
// body read.
func post(t testing.TB, ts *testServer, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// session initializes a session and returns its id.
func session(t testing.TB, ts *testServer) string {
	t.Helper()
	resp, body := post(t, ts, initBody, nil)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: %s %s", resp.Status, body)
	}
	post(t, ts, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": id, "MCP-Protocol-Version": "2025-11-25"})
	return id
}

// rpcError decodes a JSON-RPC error response body (JSON or one SSE event).
func rpcError(t testing.TB, body []byte) (code int, msg string) {
	t.Helper()
	if i := bytes.Index(body, []byte("data: ")); i >= 0 {
		body, _, _ = bytes.Cut(body[i+6:], []byte("\n"))
	}
	var r struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Error == nil {
		t.Fatalf("want a JSON-RPC error, got %q (%v)", trunc(body), err)
	}
	return r.Error.Code, r.Error.Message
}

func trunc(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// batch returns a JSON array of n skills/list requests.
func batch(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"skills/list","params":{}}`, i+2)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// rawPost writes a POST of body with the given headers on a new raw
// connection and returns the connection, unread; write errors are
// ignored, as an attacker would.
func rawPost(t testing.TB, addr string, body []byte, header string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n%s\r\n", addr, len(body), header)
	c.Write(body) // a server that refuses early may reset the connection
	return c
}

// readResponse reads one HTTP response from c within d.
func readResponse(t testing.TB, c net.Conn, d time.Duration) (*http.Response, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
