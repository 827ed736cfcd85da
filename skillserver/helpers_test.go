package skillserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/skilltest"
	"github.com/skillport/skillport/skillserver"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// writeTree writes files (slash paths relative to dir) and returns dir.
func writeTree(t testing.TB, dir string, files map[string]string) string {
	t.Helper()
	skilltest.WriteFiles(t, dir, files)
	return dir
}

func skillMD(name, desc string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\n# %s\n\nSee references/GUIDE.md.\n", name, desc, name)
}

// fixture is a served skills directory with a canary file next to it.
type fixture struct {
	Root   string // holds skills/ and the canary
	Dir    string // the served directory
	Src    *published.CatalogSource
	Skills *skillserver.Server
	MCP    *mcp.Server
}

const canary = "CANARY-7f3e1c-OUTSIDE-THE-ROOT"

func newFixture(t testing.TB, files map[string]string, opts *skillserver.Options) *fixture {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "skills")
	writeTree(t, dir, files)
	writeTree(t, root, map[string]string{"canary.txt": canary, "secret/SKILL.md": canary})
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	src := published.NewCatalogSource(cat)
	if opts == nil {
		opts = &skillserver.Options{TTL: -1}
	}
	if opts.Logger == nil {
		opts.Logger = discard
	}
	s, sk, err := skillserver.New(nil, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{Root: root, Dir: dir, Src: src, Skills: sk, MCP: s}
}

// reload rebuilds the catalog from disk and swaps it in, as live reload does.
func (f *fixture) reload(t testing.TB) {
	t.Helper()
	c, err := f.Src.Catalog().Reload()
	if err != nil {
		t.Fatal(err)
	}
	f.Src.Swap(c)
}

// rawClient speaks newline-delimited JSON-RPC to a server, so that tests see
// the exact bytes of every response.
type rawClient struct {
	t     testing.TB
	conn  net.Conn
	r     *bufio.Reader
	id    int
	mu    sync.Mutex
	notes []json.RawMessage // notifications received, in order
	all   []byte            // every byte received
	init  json.RawMessage   // the initialize result
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// connectRaw connects a raw client to s, initialized with protocolVersion.
func connectRaw(t testing.TB, s *mcp.Server, protocolVersion string) *rawClient {
	t.Helper()
	return dialRaw(t, s, nil, map[string]any{}, protocolVersion)
}

func (c *rawClient) send(msg map[string]any) {
	b, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawClient) notify(method string, params any) {
	c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// call sends a request and returns its result or error, and the raw response line.
func (c *rawClient) call(method string, params any) (json.RawMessage, *rpcError, []byte) {
	c.t.Helper()
	c.id++
	id := c.id
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	c.send(msg)
	for {
		line := c.readLine()
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			c.t.Fatalf("bad JSON from server: %v: %s", err, line)
		}
		if m.ID == nil {
			c.mu.Lock()
			c.notes = append(c.notes, json.RawMessage(line))
			c.mu.Unlock()
			continue
		}
		if *m.ID != id {
			c.t.Fatalf("response for id %d while waiting for %d: %s", *m.ID, id, line)
		}
		return m.Result, m.Error, line
	}
}

func (c *rawClient) readLine() []byte {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	c.all = append(c.all, line...)
	return line
}

// waitNote waits for a notification with the given method and returns it.
func (c *rawClient) waitNote(method string, timeout time.Duration) json.RawMessage {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		for i, n := range c.notes {
			var m struct {
				Method string `json:"method"`
			}
			json.Unmarshal(n, &m)
			if m.Method == method {
				c.notes = append(c.notes[:i:i], c.notes[i+1:]...)
				c.mu.Unlock()
				return n
			}
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			c.t.Fatalf("no %s notification within %v", method, timeout)
		}
		c.conn.SetReadDeadline(time.Now().Add(time.Until(deadline)))
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("no %s notification within %v (%v)", method, timeout, err)
		}
		c.all = append(c.all, line...)
		c.mu.Lock()
		c.notes = append(c.notes, json.RawMessage(line))
		c.mu.Unlock()
	}
}

// must decodes a successful result into v.
func must[T any](t testing.TB, res json.RawMessage, rerr *rpcError, raw []byte) T {
	t.Helper()
	var v T
	if rerr != nil {
		t.Fatalf("unexpected error: %d %s (%s)", rerr.Code, rerr.Message, raw)
	}
	if err := json.Unmarshal(res, &v); err != nil {
		t.Fatalf("decoding %s: %v", res, err)
	}
	return v
}

// get calls method and decodes its successful result, failing the test on an error.
func get[T any](c *rawClient, method string, params any) T {
	c.t.Helper()
	res, rerr, raw := c.call(method, params)
	return must[T](c.t, res, rerr, raw)
}

// dialRaw connects a raw client to s through wrap (nil: a plain
// IOTransport) and initializes it with caps and protocolVersion ("":
// 2025-11-25).
func dialRaw(t testing.TB, s *mcp.Server, wrap func(mcp.Transport) mcp.Transport, caps map[string]any, protocolVersion string) *rawClient {
	t.Helper()
	c1, c2 := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var tr mcp.Transport = &mcp.IOTransport{Reader: c2, Writer: c2}
	if wrap != nil {
		tr = wrap(tr)
	}
	ss, err := s.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); c1.Close(); ss.Close() })
	c := &rawClient{t: t, conn: c1, r: bufio.NewReaderSize(c1, 1<<20)}
	if protocolVersion == "" {
		protocolVersion = "2025-11-25"
	}
	res, rerr, _ := c.call("initialize", map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "raw", "version": "0"},
	})
	if rerr != nil {
		t.Fatalf("initialize: %+v", rerr)
	}
	c.init = res
	c.notify("notifications/initialized", map[string]any{})
	return c
}

// legacyFiles is a tree for the by-name methods: a required argument, two
// skills with one name, and a secret outside the skill.
func legacyFiles() map[string]string {
	return map[string]string{
		"report/SKILL.md":             "---\nname: report\ndescription: Write a report.\narguments:\n  - name: topic\n    required: true\n  - name: tone\n    description: formal or casual\ndependencies:\n  tools: [read_pdf, write_pdf]\n  prompts: [summarize]\n---\nWrite a {{ topic }} report in a {{tone}} tone. Keep {{other}} as written.\n",
		"report/references/guide.md":  "# Guide\n",
		"report/scripts/run.sh":       "echo hi\n",
		"team-a/dup/SKILL.md":         skillMD("dup", "First dup."),
		"team-b/dup/SKILL.md":         skillMD("dup", "Second dup."),
		"team-b/dup/references/x.txt": "x",
	}
}

func wantError(t *testing.T, c *rawClient, method string, params any, code int, dataKey string) *rpcError {
	t.Helper()
	_, rerr, raw := c.call(method, params)
	if rerr == nil {
		t.Fatalf("%s %v: no error: %s", method, params, raw)
	}
	if rerr.Code != code {
		t.Fatalf("%s %v: code %d (%s), want %d", method, params, rerr.Code, rerr.Message, code)
	}
	if dataKey != "" {
		var d map[string]any
		json.Unmarshal(rerr.Data, &d)
		if _, ok := d[dataKey]; !ok {
			t.Errorf("%s %v: error data %s lacks %q", method, params, rerr.Data, dataKey)
		}
	}
	return rerr
}
