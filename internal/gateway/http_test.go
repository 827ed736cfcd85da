package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/skillserver"
)

// sseMessages posts one JSON-RPC message to url and returns a channel of
// the messages of the response stream, closed when it ends.
func sseMessages(t *testing.T, ctx context.Context, url string, headers map[string]string, msg map[string]any) <-chan map[string]json.RawMessage {
	t.Helper()
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %v: %v %v", msg["method"], err, resp)
	}
	ch := make(chan map[string]json.RawMessage, 16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			var m map[string]json.RawMessage
			if json.NewDecoder(resp.Body).Decode(&m) == nil {
				ch <- m
			}
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				var m map[string]json.RawMessage
				if json.Unmarshal([]byte(strings.TrimSpace(d)), &m) == nil {
					ch <- m
				}
			}
		}
	}()
	return ch
}

// serveGateway serves g's one HTTP endpoint on loopback once its upstreams
// are listed, and returns its URL.
func serveGateway(t *testing.T, g *gateway.Gateway) string {
	t.Helper()
	<-g.Ready()
	h := g.Handler(&skillserver.HTTPOptions{Logger: discard})
	t.Cleanup(func() { h.Close() })
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func method(m map[string]json.RawMessage) string {
	var s string
	json.Unmarshal(m["method"], &s)
	return s
}

func modernRequest(id int, method string, params map[string]any, caps map[string]any) (map[string]string, map[string]any) {
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	return map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method},
		map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
}

// TestHTTPListenDeliversListChanged: the gateway advertises listChanged for
// tools, prompts and resources to 2026-07-28 clients, and delivers all three
// on subscriptions/listen of its one endpoint when an upstream changes.
func TestHTTPListenDeliversListChanged(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, examples, dir)
	docs, src := ourUpstream(t, "docs", dir)
	g := newGateway(t, []host.Origin{docs}, &host.Options{Approver: &allow{}, RefreshInterval: 10 * time.Millisecond}, nil)
	url := serveGateway(t, g)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	hd, msg := modernRequest(1, "server/discover", map[string]any{}, map[string]any{})
	disc := <-sseMessages(t, ctx, url, hd, msg)
	var res struct {
		Capabilities struct {
			Tools, Prompts, Resources *struct{ ListChanged bool }
		}
	}
	json.Unmarshal(disc["result"], &res)
	c := res.Capabilities
	if c.Tools == nil || !c.Tools.ListChanged || c.Prompts == nil || !c.Prompts.ListChanged || c.Resources == nil || !c.Resources.ListChanged {
		t.Fatalf("discover capabilities %s: want listChanged on tools, prompts and resources", disc["result"])
	}
	hd, msg = modernRequest(2, "subscriptions/listen", map[string]any{"notifications": map[string]any{
		"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}}, map[string]any{})
	listen := sseMessages(t, ctx, url, hd, msg)
	if m := <-listen; method(m) != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message on subscriptions/listen: %v", m)
	}
	writeSkill(t, dir, "new-skill", "A brand new skill for testing change propagation.")
	cat, err := src.Catalog().Reload()
	if err != nil {
		t.Fatal(err)
	}
	src.Swap(cat)
	seen := map[string]bool{}
	for len(seen) < 3 {
		m, ok := <-listen
		if !ok {
			t.Fatalf("the listen stream ended having delivered only %v", seen)
		}
		if n := method(m); strings.HasSuffix(n, "/list_changed") {
			seen[n] = true
		}
	}
}

// TestHTTPModernNeverAsksOnTheRequestStream: a 2026-07-28 client's tool call
// that needs the user's approval is answered with an input request in the
// result, never with an elicitation/create request on the response stream,
// and no log message reaches a client that set no log level.
func TestHTTPModernNeverAsksOnTheRequestStream(t *testing.T) {
	docs, _ := ourUpstream(t, "docs", examples)
	policy := &approval.Policy{Fallback: &gateway.Elicitation{}}
	store, _ := approval.Open("")
	g := newGateway(t, []host.Origin{docs}, &host.Options{Approver: policy, Approvals: store}, nil)
	url := serveGateway(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	for _, caps := range []map[string]any{{"elicitation": map[string]any{"form": map[string]any{}}}, {}} {
		hd, msg := modernRequest(3, "tools/call", map[string]any{"name": "read_skill", "arguments": map[string]any{"name": "code-review"}}, caps)
		hd["Mcp-Name"] = "read_skill"
		var final map[string]json.RawMessage
		for m := range sseMessages(t, ctx, url, hd, msg) {
			switch n := method(m); {
			case n == "notifications/message":
				t.Errorf("caps %v: a log message without a requested level: %v", caps, m)
			case n != "" && !strings.HasPrefix(n, "notifications/"):
				t.Errorf("caps %v: an independent request %q on the request stream", caps, n)
			case m["id"] != nil:
				final = m
			}
		}
		if final == nil {
			t.Fatalf("caps %v: no response", caps)
		}
		var r struct {
			ResultType    string         `json:"resultType"`
			InputRequests map[string]any `json:"inputRequests"`
			IsError       bool           `json:"isError"`
		}
		json.Unmarshal(final["result"], &r)
		if len(caps) > 0 && (r.ResultType != "input_required" || len(r.InputRequests) == 0) {
			t.Errorf("a client that declared elicitation: %s, want an input_required result carrying the approval question", final["result"])
		}
		if len(caps) == 0 && (!r.IsError || r.ResultType == "input_required") {
			t.Errorf("a client that did not declare elicitation: %s, want the policy's refusal, not a question", final["result"])
		}
	}
}

// TestHTTPGatewaySessionCap: gateway --http --max-sessions caps the sessions
// of older revisions with HTTP 503 naming the flag, while 2026-07-28
// requests, which need none, are still served.
func TestHTTPGatewaySessionCap(t *testing.T) {
	url := gatewayHTTP(t, peerConfig(t, "docs"), "--max-sessions", "1")
	initialize := func() (int, string) {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := initialize(); code != http.StatusOK {
		t.Fatalf("first initialize: HTTP %d %s", code, body)
	}
	if code, body := initialize(); code != http.StatusServiceUnavailable || !strings.Contains(body, "--max-sessions") {
		t.Errorf("second initialize with --max-sessions 1: HTTP %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	hd, msg := modernRequest(1, "server/discover", map[string]any{}, map[string]any{})
	if m := <-sseMessages(t, ctx, url, hd, msg); m["result"] == nil {
		t.Errorf("2026-07-28 server/discover at the session cap: %v", m)
	}
}
