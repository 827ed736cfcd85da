package skillserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// httpPeer speaks raw Streamable HTTP to a handler on loopback, so that
// tests see status codes, headers and the exact JSON of every message.
type httpPeer struct {
	t   testing.TB
	url string
	id  int
}

// mount starts h on a loopback listener.
func mount(t testing.TB, h http.Handler) *httpPeer {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return &httpPeer{t: t, url: ts.URL + "/mcp"}
}

// reply is one HTTP exchange: the status, the session id header, and every
// JSON-RPC message of the body (one for JSON, any number for SSE).
type reply struct {
	status  int
	session string
	msgs    []map[string]json.RawMessage
	body    string
}

// last returns the JSON-RPC response of the exchange (the message with an id).
func (r reply) response(t testing.TB) map[string]json.RawMessage {
	t.Helper()
	for _, m := range r.msgs {
		if _, ok := m["id"]; ok {
			return m
		}
	}
	t.Fatalf("no JSON-RPC response in HTTP %d: %s", r.status, r.body)
	return nil
}

// modernMeta is the _meta of a 2026-07-28 request whose client declared the
// Skills Extension.
func modernMeta(extension bool) map[string]any {
	caps := map[string]any{}
	if extension {
		caps["extensions"] = map[string]any{wire.ExtensionID: map[string]any{}}
	}
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-http", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// post sends one JSON-RPC request (or notification, when method starts
// with notifications/) with the given headers.
func (p *httpPeer) post(headers map[string]string, method string, params any) reply {
	p.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if !strings.HasPrefix(method, "notifications/") {
		p.id++
		msg["id"] = p.id
	}
	if params != nil {
		msg["params"] = params
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, p.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", method)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return p.do(req)
}

func (p *httpPeer) do(req *http.Request) reply {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		p.t.Fatalf("%s %s: %v", req.Method, p.url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, session: resp.Header.Get("Mcp-Session-Id"), body: string(data)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.SplitSeq(string(data), "\n") {
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				var m map[string]json.RawMessage
				if json.Unmarshal([]byte(strings.TrimSpace(d)), &m) == nil {
					r.msgs = append(r.msgs, m)
				}
			}
		}
	} else {
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) == nil {
			r.msgs = append(r.msgs, m)
		}
	}
	return r
}

// modern sends a 2026-07-28 request.
func (p *httpPeer) modern(method string, params map[string]any, extension bool) reply {
	p.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = modernMeta(extension)
	return p.post(map[string]string{"MCP-Protocol-Version": "2026-07-28"}, method, params)
}

// initialize opens a session of an older revision and returns its id.
func (p *httpPeer) initialize(version string, extension bool) (string, map[string]json.RawMessage) {
	p.t.Helper()
	caps := map[string]any{}
	if extension {
		caps["extensions"] = map[string]any{wire.ExtensionID: map[string]any{}}
	}
	r := p.post(nil, "initialize", map[string]any{"protocolVersion": version, "capabilities": caps,
		"clientInfo": map[string]any{"name": "raw-http", "version": "0"}})
	if r.status != http.StatusOK {
		p.t.Fatalf("initialize %s: HTTP %d: %s", version, r.status, r.body)
	}
	res := r.response(p.t)
	if r.session != "" {
		p.post(map[string]string{"Mcp-Session-Id": r.session, "MCP-Protocol-Version": version}, "notifications/initialized", map[string]any{})
	}
	return r.session, res
}

// legacy sends a request of an older revision on a session ("" for none).
func (p *httpPeer) legacy(session, version, method string, params any) reply {
	p.t.Helper()
	h := map[string]string{"MCP-Protocol-Version": version}
	if session != "" {
		h["Mcp-Session-Id"] = session
	}
	return p.post(h, method, params)
}

func result[T any](t testing.TB, r reply) T {
	t.Helper()
	m := r.response(t)
	var v T
	if e, ok := m["error"]; ok {
		t.Fatalf("HTTP %d: error %s", r.status, e)
	}
	if err := json.Unmarshal(m["result"], &v); err != nil {
		t.Fatalf("decoding %s: %v", m["result"], err)
	}
	return v
}

func rpcErr(t testing.TB, r reply) rpcError {
	t.Helper()
	m := r.response(t)
	var e rpcError
	if err := json.Unmarshal(m["error"], &e); err != nil || e.Code == 0 {
		t.Fatalf("HTTP %d: want a JSON-RPC error, got %s", r.status, r.body)
	}
	return e
}

type capsResult struct {
	SupportedVersions []string `json:"supportedVersions"`
	Capabilities      struct {
		Tools     *struct{ ListChanged bool } `json:"tools"`
		Prompts   *struct{ ListChanged bool } `json:"prompts"`
		Resources *struct {
			ListChanged bool `json:"listChanged"`
			Subscribe   bool `json:"subscribe"`
		} `json:"resources"`
		Extensions map[string]json.RawMessage `json:"extensions"`
	} `json:"capabilities"`
}

// TestHTTPOneEndpoint: with no option, a 2026-07-28 request is served
// without a session and an older revision's initialize gets one, on the
// same endpoint.
func TestHTTPOneEndpoint(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{Logger: discard})
	t.Cleanup(func() { h.Close() })
	p := mount(t, h)

	r := p.modern("server/discover", nil, true)
	if r.status != http.StatusOK || r.session != "" {
		t.Fatalf("server/discover 2026-07-28: HTTP %d, session %q: %s; want 200 without a session", r.status, r.session, r.body)
	}
	disc := result[capsResult](t, r)
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18"} {
		if !slices.Contains(disc.SupportedVersions, v) {
			t.Errorf("supportedVersions %v lacks %s", disc.SupportedVersions, v)
		}
	}
	if rs := disc.Capabilities.Resources; rs == nil || !rs.ListChanged || !rs.Subscribe {
		t.Errorf("discover resources capability %+v: list_changed and updates reach 2026-07-28 clients on subscriptions/listen, so both are advertised", rs)
	}
	list := result[wire.ListSkillsResult](t, p.modern(wire.MethodListSkills, nil, true))
	if len(list.Skills) != 4 {
		t.Errorf("2026-07-28 skills/list: %d skills, want 4", len(list.Skills))
	}
	if h.Sessions() != 0 {
		t.Errorf("2026-07-28 requests left %d sessions, want 0", h.Sessions())
	}

	for _, version := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
		sid, init := p.initialize(version, true)
		if sid == "" {
			t.Fatalf("initialize %s: no Mcp-Session-Id", version)
		}
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
			capsResult
		}
		json.Unmarshal(init["result"], &res)
		if res.ProtocolVersion != version {
			t.Errorf("initialize %s negotiated %s", version, res.ProtocolVersion)
		}
		if rs := res.Capabilities.Resources; rs == nil || !rs.ListChanged || !rs.Subscribe {
			t.Errorf("initialize %s: resources capability %+v, want listChanged and subscribe (a session has a stream)", version, rs)
		}
		got := result[wire.ListSkillsResult](t, p.legacy(sid, version, wire.MethodListSkills, nil))
		if len(got.Skills) != 4 {
			t.Errorf("%s session skills/list: %d skills, want 4", version, len(got.Skills))
		}
	}
	if h.Sessions() != 3 {
		t.Errorf("%d sessions held, want 3", h.Sessions())
	}
}

// TestHTTPAdvertisesWhatIsServed: the capabilities of every mode and
// revision match what the server answers and can deliver.
func TestHTTPAdvertisesWhatIsServed(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	for _, stateless := range []bool{false, true} {
		h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{Stateless: stateless, Logger: discard})
		t.Cleanup(func() { h.Close() })
		p := mount(t, h)
		disc := result[capsResult](t, p.modern("server/discover", nil, true))
		for _, m := range []string{"tools/list", "prompts/list"} {
			r := p.modern(m, nil, true)
			e := r.response(t)
			_, failed := e["error"]
			what := strings.TrimSuffix(m, "/list")
			declared := (what == "tools" && disc.Capabilities.Tools != nil) || (what == "prompts" && disc.Capabilities.Prompts != nil)
			if failed == declared {
				t.Errorf("stateless=%v: %s answered %s but the %s capability declared=%v", stateless, m, r.body, what, declared)
			}
		}
		_, init := p.initialize("2025-11-25", true)
		var res capsResult
		json.Unmarshal(init["result"], &res)
		rs := res.Capabilities.Resources
		if stateless {
			// No session, no stream: nothing can reach this client later.
			if rs == nil || rs.ListChanged || rs.Subscribe {
				t.Errorf("--stateless initialize 2025-11-25: resources capability %+v, want neither listChanged nor subscribe", rs)
			}
			e := rpcErr(t, p.legacy("", "2025-11-25", "resources/subscribe", map[string]any{"uri": "skill://alpha/SKILL.md"}))
			// go-sdk rewrites every -32601 message to "method not found".
			if e.Code != -32601 {
				t.Errorf("--stateless resources/subscribe: %+v, want -32601", e)
			}
		} else if rs == nil || !rs.ListChanged || !rs.Subscribe {
			t.Errorf("initialize 2025-11-25: resources capability %+v, want listChanged and subscribe", rs)
		}
	}
}

// TestHTTPEntryShape: a client that declared the extension gets skills/list
// entries identical to skills/get entries, in every mode and revision.
func TestHTTPEntryShape(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	type call func(method string, params map[string]any) reply
	for _, stateless := range []bool{false, true} {
		h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{Stateless: stateless, Logger: discard})
		t.Cleanup(func() { h.Close() })
		p := mount(t, h)
		clients := map[string]call{
			"2026-07-28": func(m string, params map[string]any) reply { return p.modern(m, params, true) },
		}
		if stateless {
			// An older revision's request to a stateless server declares
			// the extension in its own _meta, or not at all.
			clients["2025-11-25 stateless, _meta"] = func(m string, params map[string]any) reply {
				if params == nil {
					params = map[string]any{}
				}
				params["_meta"] = map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
					"extensions": map[string]any{wire.ExtensionID: map[string]any{}}}}
				return p.legacy("", "2025-11-25", m, params)
			}
			// One that declared it at initialize sends its requests with
			// nothing that says so: a stateless server cannot know, and
			// must not serve it the superset, whose entries differ from
			// skills/get's (issue 27, point 13).
			p.initialize("2025-11-25", true)
			clients["2025-11-25 stateless, declared at initialize"] = func(m string, params map[string]any) reply {
				return p.legacy("", "2025-11-25", m, params)
			}
		} else {
			sid, _ := p.initialize("2025-11-25", true)
			clients["2025-11-25 session"] = func(m string, params map[string]any) reply {
				return p.legacy(sid, "2025-11-25", m, params)
			}
		}
		for name, do := range clients {
			list := result[struct {
				Skills []json.RawMessage `json:"skills"`
			}](t, do(wire.MethodListSkills, nil))
			if len(list.Skills) != 4 {
				t.Fatalf("stateless=%v %s: %d skills", stateless, name, len(list.Skills))
			}
			for _, e := range list.Skills {
				var id struct{ URI string }
				json.Unmarshal(e, &id)
				got := result[struct {
					Skill json.RawMessage `json:"skill"`
				}](t, do(wire.MethodGetSkill, map[string]any{"uri": id.URI}))
				if !bytes.Equal(got.Skill, e) {
					t.Errorf("stateless=%v %s: skills/list entry\n%s\ndiffers from skills/get entry\n%s", stateless, name, e, got.Skill)
				}
			}
		}
	}
}

// TestHTTPUnsupportedVersion: a version this server does not speak is
// answered with the JSON-RPC error listing the versions it really accepts,
// each of which it then serves.
func TestHTTPUnsupportedVersion(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{Logger: discard})
	t.Cleanup(func() { h.Close() })
	p := mount(t, h)
	for _, method := range []string{"server/discover", "initialize", wire.MethodListSkills} {
		r := p.post(map[string]string{"MCP-Protocol-Version": "2024-01-01"}, method, map[string]any{})
		if r.status != http.StatusBadRequest {
			t.Errorf("%s with version 2024-01-01: HTTP %d, want 400", method, r.status)
		}
		e := rpcErr(t, r)
		var data struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}
		json.Unmarshal(e.Data, &data)
		if e.Code != -32022 || data.Requested != "2024-01-01" || len(data.Supported) == 0 {
			t.Fatalf("%s: %s, want -32022 with data {supported, requested}", method, r.body)
		}
		if string(r.response(t)["id"]) != fmt.Sprint(p.id) {
			t.Errorf("%s: error id %s, want %d", method, r.response(t)["id"], p.id)
		}
		for _, v := range data.Supported {
			if v >= skillserver.ModernProtocolVersion {
				if r := p.modern("server/discover", nil, true); r.status != http.StatusOK {
					t.Errorf("listed %s but server/discover answered HTTP %d: %s", v, r.status, r.body)
				}
				continue
			}
			if sid, _ := p.initialize(v, false); sid == "" {
				t.Errorf("listed %s but its initialize got no session", v)
			}
		}
	}
}

// TestHTTPSessionCap: sessions beyond MaxSessions are refused with HTTP 503
// and a JSON-RPC error naming the limit, and a freed slot is reused.
func TestHTTPSessionCap(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{MaxSessions: 3, Logger: discard})
	t.Cleanup(func() { h.Close() })
	p := mount(t, h)
	var ids []string
	for range 3 {
		sid, _ := p.initialize("2025-11-25", true)
		ids = append(ids, sid)
	}
	for range 5 {
		r := p.post(nil, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "x", "version": "0"}})
		if r.status != http.StatusServiceUnavailable || r.session != "" {
			t.Fatalf("initialize beyond the cap: HTTP %d, session %q, want 503 and no session: %s", r.status, r.session, r.body)
		}
		e := rpcErr(t, r)
		if e.Code != skillserver.CodeTooManySessions || !strings.Contains(e.Message, "3 sessions") || !strings.Contains(e.Message, "--max-sessions") {
			t.Errorf("refusal %+v does not name the limit and the flag", e)
		}
	}
	if n := h.Sessions(); n != 3 {
		t.Errorf("%d sessions held, want 3", n)
	}
	// 2026-07-28 requests need no session and are still served.
	if r := p.modern(wire.MethodListSkills, nil, true); r.status != http.StatusOK {
		t.Errorf("2026-07-28 request at the session cap: HTTP %d", r.status)
	}
	req, _ := http.NewRequest(http.MethodDelete, p.url, nil)
	req.Header.Set("Mcp-Session-Id", ids[0])
	if r := p.do(req); r.status/100 != 2 {
		t.Fatalf("DELETE: HTTP %d", r.status)
	}
	if n := h.Sessions(); n != 2 {
		t.Errorf("%d sessions held after a DELETE, want 2", n)
	}
	if sid, _ := p.initialize("2025-11-25", true); sid == "" {
		t.Error("no session after one was ended")
	}
	if r := p.legacy(ids[1], "2025-11-25", "ping", nil); r.status != http.StatusOK {
		t.Errorf("an existing session stopped answering: HTTP %d", r.status)
	}
	h.Close()
	if r := p.legacy(ids[1], "2025-11-25", "ping", nil); r.status != http.StatusNotFound {
		t.Errorf("a session after Close: HTTP %d, want 404", r.status)
	}
	r := p.post(nil, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "x", "version": "0"}})
	if e := rpcErr(t, r); r.status != http.StatusServiceUnavailable || !strings.Contains(e.Message, "shutting down") {
		t.Errorf("initialize after Close: HTTP %d %s", r.status, r.body)
	}
}

// TestHTTPSessionIdleExpiry: a session with nothing open expires after
// SessionTimeout; one with an open stream or steady requests does not.
func TestHTTPSessionIdleExpiry(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	const timeout = 300 * time.Millisecond
	h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{SessionTimeout: timeout, Logger: discard})
	t.Cleanup(func() { h.Close() })
	p := mount(t, h)
	idle, _ := p.initialize("2025-11-25", true)
	busy, _ := p.initialize("2025-11-25", true)
	streaming, _ := p.initialize("2025-11-25", true)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", streaming)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, resp)
	}
	defer resp.Body.Close()

	// Steady requests on busy until the idle session is gone: the count
	// of sessions says when, where a request on idle would keep it alive.
	start := time.Now()
	for h.Sessions() > 2 {
		if r := p.legacy(busy, "2025-11-25", "ping", nil); r.status != http.StatusOK {
			t.Fatalf("a session in steady use expired: HTTP %d", r.status)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d sessions held 10s into a SessionTimeout of %v, want the idle one expired", h.Sessions(), timeout)
		}
		time.Sleep(timeout / 4)
	}
	if r := p.legacy(idle, "2025-11-25", "ping", nil); r.status != http.StatusNotFound {
		t.Errorf("idle session after %v: HTTP %d, want 404 (expired)", time.Since(start), r.status)
	}
	if r := p.legacy(streaming, "2025-11-25", "ping", nil); r.status != http.StatusOK {
		t.Errorf("session with an open GET stream: HTTP %d, want 200", r.status)
	}
	if n := h.Sessions(); n != 2 {
		t.Errorf("%d sessions held, want 2", n)
	}
}

// TestHTTPListChangedEveryRevision: a change reaches an older revision's
// session on its GET stream and a 2026-07-28 client on subscriptions/listen.
func TestHTTPListChangedEveryRevision(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{Logger: discard})
	t.Cleanup(func() { h.Close() })
	p := mount(t, h)
	sid, _ := p.initialize("2025-11-25", true)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", sid)
	get.Header.Set("MCP-Protocol-Version", "2025-11-25")
	legacy := stream(t, get)

	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": map[string]any{
		"_meta": modernMeta(true), "notifications": map[string]any{"resourcesListChanged": true,
			"resourceSubscriptions": []string{"skill://alpha/references/GUIDE.md"}}}})
	listen, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	listen.Header.Set("Content-Type", "application/json")
	listen.Header.Set("Accept", "application/json, text/event-stream")
	listen.Header.Set("MCP-Protocol-Version", "2026-07-28")
	listen.Header.Set("Mcp-Method", "subscriptions/listen")
	modern := stream(t, listen)
	if m := <-modern; m != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message on subscriptions/listen: %s", m)
	}

	writeTree(t, f.Dir, map[string]string{"epsilon/SKILL.md": skillMD("epsilon", "New")})
	f.reload(t)
	waitFor := func(name string, ch <-chan string, want string) {
		for {
			m, ok := <-ch
			if !ok {
				t.Errorf("%s: ended without %s", name, want)
				return
			}
			if m == want {
				return
			}
		}
	}
	waitFor("2025-11-25 GET stream", legacy, "notifications/resources/list_changed")
	waitFor("2026-07-28 subscriptions/listen", modern, "notifications/resources/list_changed")
	// A subscribed file's change reaches the listen stream too.
	writeTree(t, f.Dir, map[string]string{"alpha/references/GUIDE.md": "# Guide, v2\n"})
	f.reload(t)
	waitFor("2026-07-28 subscriptions/listen", modern, "notifications/resources/updated")
}

// stream returns the methods of the messages of an SSE response, in order.
func stream(t *testing.T, req *http.Request) <-chan string {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s stream: %v %v", req.Method, err, resp)
	}
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				var m struct{ Method string }
				if json.Unmarshal([]byte(strings.TrimSpace(d)), &m) == nil && m.Method != "" {
					ch <- m.Method
				}
			}
		}
	}()
	return ch
}

// TestHTTPBodyLimit: the body read to route a request is bounded by
// go-sdk's own request limit; a larger one is refused with 413.
func TestHTTPBodyLimit(t *testing.T) {
	f := newFixture(t, baseFiles(), nil)
	h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{Logger: discard})
	t.Cleanup(func() { h.Close() })
	p := mount(t, h)
	for _, version := range []string{"", "2024-01-01"} {
		pad := strings.Repeat("x", 5<<20)
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + pad + `"}}`
		req, _ := http.NewRequest(http.MethodPost, p.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		if r := p.do(req); r.status != http.StatusRequestEntityTooLarge {
			t.Errorf("5 MiB body (version %q): HTTP %d, want 413", version, r.status)
		}
	}
	if n := h.Sessions(); n != 0 {
		t.Errorf("%d sessions after refused requests", n)
	}
}
