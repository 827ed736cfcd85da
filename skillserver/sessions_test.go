package skillserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// inProcess drives an HTTPHandler without a network, so that a test can
// run it in a synctest bubble: each call is one request, answered whole.
type inProcess struct {
	t  *testing.T
	h  http.Handler
	id int
}

func (c *inProcess) post(sid, method string, params any) *httptest.ResponseRecorder {
	c.t.Helper()
	return c.postAs("", sid, method, params)
}

// postAs is post with the bearer token token ("" for none).
func (c *inProcess) postAs(token, sid, method string, params any) *httptest.ResponseRecorder {
	c.t.Helper()
	c.id++
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if !strings.HasPrefix(method, "notifications/") {
		msg["id"] = c.id
	}
	body, _ := json.Marshal(msg)
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	return w
}

func (c *inProcess) initialize() string {
	c.t.Helper()
	w := c.post("", "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "0"}})
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		c.t.Fatalf("initialize: HTTP %d, session %q: %s", w.Code, sid, w.Body)
	}
	c.post(sid, "notifications/initialized", map[string]any{})
	return sid
}

func (c *inProcess) delete(sid string) int {
	r := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
	r.Header.Set("Mcp-Session-Id", sid)
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	return w.Code
}

// sdkHolds reports whether go-sdk's server still has session sid.
func sdkHolds(s *mcp.Server, sid string) bool {
	for ss := range s.Sessions() {
		if ss.ID() == sid {
			return true
		}
	}
	return false
}

// TestHTTPSessionTableOne: a session ended in any one place (the client's
// DELETE to go-sdk, go-sdk's Close, our idle expiry, the handler's Close)
// is gone from both tables, go-sdk's and the handler's, and is served
// neither by the thin path nor by go-sdk; an initialize that fails leaves
// no entry. On main the handler kept an entry of a DELETEd session until
// something counted sessions at the cap.
func TestHTTPSessionTableOne(t *testing.T) {
	const timeout = time.Minute
	for _, tc := range []struct {
		name string
		end  func(c *inProcess, f *fixture, h *skillserver.HTTPHandler, sid string)
	}{
		{"DELETE", func(c *inProcess, _ *fixture, _ *skillserver.HTTPHandler, sid string) {
			if code := c.delete(sid); code != http.StatusNoContent {
				t.Fatalf("DELETE: HTTP %d", code)
			}
		}},
		{"go-sdk Close", func(_ *inProcess, f *fixture, _ *skillserver.HTTPHandler, sid string) {
			for ss := range f.MCP.Sessions() {
				if ss.ID() == sid {
					ss.Close()
				}
			}
		}},
		{"idle expiry", func(*inProcess, *fixture, *skillserver.HTTPHandler, string) { time.Sleep(timeout + time.Second) }},
		{"handler Close", func(_ *inProcess, _ *fixture, h *skillserver.HTTPHandler, _ string) { h.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, baseFiles(), nil)
				h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{SessionTimeout: timeout, Logger: discard})
				defer h.Close()
				c := &inProcess{t: t, h: h}
				sid := c.initialize()
				keep := c.initialize()
				served := skillserver.FastServed(f.Skills)
				if w := c.post(sid, wire.MethodListSkills, map[string]any{}); w.Code != http.StatusOK || skillserver.FastServed(f.Skills) != served+1 {
					t.Fatalf("skills/list on the session: HTTP %d, thin path %v: %s", w.Code, skillserver.FastServed(f.Skills) > served, w.Body)
				}
				if got := skillserver.SessionTable(h); len(got) != 2 || h.Sessions() != 2 {
					t.Fatalf("table %v, Sessions() %d; want the 2 sessions", got, h.Sessions())
				}
				if tc.name == "idle expiry" {
					// keep stays in use while sid idles out.
					for range 4 {
						time.Sleep(timeout / 2)
						c.post(keep, "ping", map[string]any{})
					}
				} else {
					tc.end(c, f, h, sid)
				}
				synctest.Wait()
				if sdkHolds(f.MCP, sid) {
					t.Error("go-sdk still holds the session")
				}
				for _, id := range skillserver.SessionTable(h) {
					if id == sid {
						t.Error("the handler's table still holds the session")
					}
				}
				want := 1
				if tc.name == "handler Close" {
					want = 0
				}
				if n := h.Sessions(); n != want {
					t.Errorf("Sessions() = %d, want %d", n, want)
				}
				for _, method := range []string{wire.MethodListSkills, "ping"} { // thin path, go-sdk
					if w := c.post(sid, method, map[string]any{}); w.Code != http.StatusNotFound {
						t.Errorf("%s on the ended session: HTTP %d, want 404: %s", method, w.Code, w.Body)
					}
				}
				if want == 1 {
					if w := c.post(keep, wire.MethodListSkills, map[string]any{}); w.Code != http.StatusOK {
						t.Errorf("the other session: HTTP %d", w.Code)
					}
				}
			})
		})
	}
}

// TestHTTPSessionCapAfterEnds: the MaxSessions bound holds however
// sessions end: failed initializes leave no entry, ended sessions free
// their place at once, and the bound still refuses the one too many.
func TestHTTPSessionCapAfterEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, baseFiles(), nil)
		h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{MaxSessions: 2, Logger: discard})
		defer h.Close()
		c := &inProcess{t: t, h: h}
		for i := range 5 {
			// go-sdk opens, then closes, a session whose initialize fails.
			if w := c.post("", "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": i}); w.Code == http.StatusOK && !strings.Contains(w.Body.String(), `"error"`) {
				t.Fatalf("initialize with capabilities %d succeeded: %s", i, w.Body)
			}
		}
		synctest.Wait()
		if got := skillserver.SessionTable(h); len(got) != 0 {
			t.Fatalf("failed initializes left %v in the table", got)
		}
		a := c.initialize()
		c.initialize()
		refused := func() bool {
			w := c.post("", "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "t", "version": "0"}})
			return w.Code == http.StatusServiceUnavailable
		}
		if !refused() {
			t.Fatal("a third session beyond MaxSessions 2 was opened")
		}
		c.delete(a)
		synctest.Wait()
		if refused() {
			t.Fatal("no session after one of two was DELETEd")
		}
		if !refused() {
			t.Fatal("a third session beyond MaxSessions 2 was opened after a DELETE")
		}
		if n, m := h.Sessions(), len(skillserver.SessionTable(h)); n != 2 || m != 2 {
			t.Errorf("Sessions() %d, table %d entries; want 2", n, m)
		}
	})
}

// TestHTTPSessionTableOwner: the table keeps who opened a session, and the
// thin path serves it to that user only, as go-sdk does: another user's
// request of it is go-sdk's 403, never an answer.
func TestHTTPSessionTableOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, baseFiles(), nil)
		h := f.Skills.HTTPHandler(&skillserver.HTTPOptions{Logger: discard})
		defer h.Close()
		verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			if token != "ann" && token != "bob" {
				return nil, auth.ErrInvalidToken
			}
			return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
		}
		c := &inProcess{t: t, h: auth.RequireBearerToken(verify, nil)(h)}
		w := c.postAs("ann", "", "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "t", "version": "0"}})
		sid := w.Header().Get("Mcp-Session-Id")
		if w.Code != http.StatusOK || sid == "" {
			t.Fatalf("initialize: HTTP %d: %s", w.Code, w.Body)
		}
		c.postAs("ann", sid, "notifications/initialized", map[string]any{})
		served := skillserver.FastServed(f.Skills)
		for _, method := range []string{wire.MethodListSkills, "resources/read"} {
			params := map[string]any{"uri": "skill://alpha/SKILL.md"}
			if w := c.postAs("bob", sid, method, params); w.Code != http.StatusForbidden {
				t.Errorf("%s of ann's session by bob: HTTP %d, want 403: %s", method, w.Code, w.Body)
			}
		}
		if n := skillserver.FastServed(f.Skills); n != served {
			t.Errorf("the thin path answered %d of bob's requests of ann's session", n-served)
		}
		if w := c.postAs("ann", sid, wire.MethodListSkills, map[string]any{}); w.Code != http.StatusOK || skillserver.FastServed(f.Skills) != served+1 {
			t.Errorf("ann's own skills/list: HTTP %d, thin path %d: %s", w.Code, skillserver.FastServed(f.Skills)-served, w.Body)
		}
	})
}
