package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/budget"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/skillserver"
)

// TestReadSkillFileChargesBudget: a read_skill_file answer of a large
// file is charged to the byte budget the endpoint puts in the request's
// context, the one the server's large reads share: while it is spent the
// read waits, then fails naming the limit, and small files never wait;
// once it is free, the read is served and its bytes given back.
func TestReadSkillFileChargesBudget(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "big", "Large files.")
	big := strings.Repeat("a line of a large reference file\n", 1<<20/32)
	for name, body := range map[string]string{"big.md": big, "small.md": "small\n"} {
		if err := os.WriteFile(filepath.Join(dir, "big", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	up, _ := ourUpstream(t, "docs", dir)
	g := newGateway(t, []host.Origin{up}, nil, nil)
	<-g.Ready()
	b := budget.New(4<<20, 200*time.Millisecond)
	ctx := budget.WithContext(context.Background(), b)
	if _, err := g.ReadSkill(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	spent, err := b.Acquire(ctx, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.ReadSkillFile(ctx, "big", "big.md"); err == nil || !strings.Contains(err.Error(), "limit of bytes") || !strings.Contains(err.Error(), "read_skill_file") {
		t.Errorf("a large read with the budget spent: %v, want a refusal naming the limit", err)
	}
	if out, err := g.ReadSkillFile(ctx, "big", "small.md"); err != nil || !strings.Contains(out, "small") {
		t.Errorf("a small read with the budget spent: %v", err)
	}
	spent()
	if out, err := g.ReadSkillFile(ctx, "big", "big.md"); err != nil || !strings.Contains(out, "a line of a large") {
		t.Errorf("a large read with the budget free: %v", err)
	}
	if n := b.InUse(); n != 0 {
		t.Errorf("%d bytes still charged after the read", n)
	}
}

// bigFileGateway returns the HTTP handler of a gateway whose one upstream
// serves the skill big with big.md, 1 MiB of "x".
func bigFileGateway(t *testing.T) *gateway.HTTPHandler {
	t.Helper()
	dir := t.TempDir()
	writeSkill(t, dir, "big", "Large files.")
	if err := os.WriteFile(filepath.Join(dir, "big", "big.md"), []byte(strings.Repeat("x", 1<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	up, _ := ourUpstream(t, "docs", dir)
	g := newGateway(t, []host.Origin{up}, nil, nil)
	<-g.Ready()
	h := g.Handler(&skillserver.HTTPOptions{Logger: discard})
	t.Cleanup(func() { h.Close() })
	return h
}

// bigSkillSession connects a client to the gateway at url and loads big.
func bigSkillSession(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if _, isErr := call(t, cs, "read_skill", map[string]any{"name": "big"}); isErr {
		t.Fatal("read_skill failed")
	}
	return cs
}

// TestReadSkillFileChargesBudgetOverHTTP: over the gateway's HTTP
// endpoint, in a session (go-sdk runs a session's tool calls in the
// context of the request that opened it), the tool sees the budget the
// endpoint put in the request's context.
func TestReadSkillFileChargesBudgetOverHTTP(t *testing.T) {
	h := bigFileGateway(t)
	b := budget.New(4<<20, 200*time.Millisecond)
	// As internal/endpoint does for every route.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(budget.WithContext(r.Context(), b)))
	}))
	t.Cleanup(ts.Close)
	cs := bigSkillSession(t, ts.URL)
	spent, err := b.Acquire(context.Background(), 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, cs, "read_skill_file", map[string]any{"skill": "big", "path": "big.md"}); !isErr || !strings.Contains(text, "limit of bytes") {
		t.Errorf("a large read over HTTP with the budget spent: %v %.200s, want a refusal naming the limit", isErr, text)
	}
	spent()
	if text, isErr := call(t, cs, "read_skill_file", map[string]any{"skill": "big", "path": "big.md"}); isErr || !strings.Contains(text, "xxxx") {
		t.Errorf("a large read over HTTP with the budget free: %.200s", text)
	}
}

// stallWriter holds the first write that carries marker until gate is
// closed, as a client that does not read its socket holds the server's
// write; stalled is closed when that write arrives.
type stallWriter struct {
	http.ResponseWriter
	marker  []byte
	armed   *atomic.Bool
	gate    <-chan struct{}
	stalled chan struct{}
}

func (s *stallWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, s.marker) && s.armed.CompareAndSwap(true, false) {
		close(s.stalled)
		<-s.gate
	}
	return s.ResponseWriter.Write(p)
}

func (s *stallWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestReadSkillFileChargeCoversTheWrite tries to break the budget with a
// client that does not read: its read_skill_file answer stays charged
// until it is written, after the tool returned, so a second large read
// meanwhile finds the budget spent and is refused, and the charge comes
// back once the first answer is written. (The charge used to end with the
// tool, and the second read was served beside the unwritten first.)
func TestReadSkillFileChargeCoversTheWrite(t *testing.T) {
	h := bigFileGateway(t)
	b := budget.New(8<<20, 300*time.Millisecond) // one read of 1 MiB is charged 5 MiB: one fits, not two
	gate, stalled := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &stallWriter{ResponseWriter: w, marker: []byte("xxxxxxxx"), armed: &armed, gate: gate, stalled: stalled}
		h.ServeHTTP(sw, r.WithContext(budget.WithContext(r.Context(), b)))
	}))
	t.Cleanup(ts.Close)
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	t.Cleanup(open)
	slow, other := bigSkillSession(t, ts.URL), bigSkillSession(t, ts.URL)
	args := map[string]any{"skill": "big", "path": "big.md"}
	first := make(chan string, 1)
	go func() {
		res, err := slow.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_skill_file", Arguments: args})
		if err != nil || res.IsError || len(res.Content) == 0 {
			first <- fmt.Sprintf("%v %+v", err, res)
			return
		}
		first <- res.Content[0].(*mcp.TextContent).Text
	}()
	select {
	case <-stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("the first read's answer was not written within 30s")
	}
	if n := b.InUse(); n < 5<<20 {
		t.Errorf("while the answer is being written, %d bytes are charged, want its 5 MiB", n)
	}
	if text, isErr := call(t, other, "read_skill_file", args); !isErr || !strings.Contains(text, "limit of bytes") {
		t.Errorf("a second large read while the first answer is unwritten: error %v, %.200s; want a refusal naming the limit", isErr, text)
	}
	open()
	if text := <-first; !strings.Contains(text, "xxxx") {
		t.Errorf("the first read, once written: %.300s", text)
	}
	for deadline := time.Now().Add(10 * time.Second); b.InUse() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still charged 10s after the answer was written", b.InUse())
		}
	}
}
