package endpoint_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/oidctest"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

const testAudience = "https://skills.test/mcp"

// authTree has a public skill, one for ops (by metadata) and one under
// internal/ (by scope).
func authTree(t testing.TB) string {
	dir := t.TempDir()
	write := func(p, md string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("public/hello/SKILL.md", "---\nname: hello\ndescription: Says hello to anyone who asks for a greeting.\n---\n# Hello\n")
	write("team/runbook/SKILL.md", "---\nname: runbook\ndescription: The ops team's runbook for incidents and pages.\nmetadata:\n  team: ops\n---\n# Runbook\n")
	write("team/runbook/notes.md", "secret notes\n")
	write("internal/payroll/SKILL.md", "---\nname: payroll\ndescription: Internal payroll procedures for finance staff.\n---\n# Payroll\n")
	return dir
}

const authRules = `{
  // everyone sees public skills
  "rules": [
    {"anyone": true, "paths": ["public/"]},
    {"group": "ops", "metadata": {"team": "ops"}},
    {"scope": "skills:internal", "paths": ["internal"]},
  ],
}`

// serveAuth serves authTree behind auth with the rules, requiring
// skills:read.
func serveAuth(t *testing.T, o *oidctest.OP) *testServer {
	t.Helper()
	return serveAuthWith(t, o, nil)
}

// serveAuthWith is serveAuth with more auth options set by opt.
func serveAuthWith(t *testing.T, o *oidctest.OP, opt func(*endpoint.AuthOptions)) *testServer {
	t.Helper()
	cat, err := catalog.OpenDir(authTree(t), &catalog.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := access.Parse("rules.jsonc", []byte(authRules))
	if err != nil {
		t.Fatal(err)
	}
	src := published.NewCatalogSource(cat)
	s, _, err := skillserver.New(&mcp.Implementation{Name: "test", Version: "0"}, access.Filter(src, rules.Visible), &skillserver.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ao := endpoint.AuthOptions{Issuer: o.URL, Audience: testAudience, Scopes: []string{"skills:read"}}
	if opt != nil {
		opt(&ao)
	}
	a, err := endpoint.NewAuth(t.Context(), ao)
	if err != nil {
		t.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)})
	return serveHandler(t, h, src, endpoint.Options{Auth: a})
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// TestAuthRefusals: every bad credential is refused before the MCP server
// sees the request, with the RFC 6750 / RFC 9728 challenge a client needs.
func TestAuthRefusals(t *testing.T) {
	o := oidctest.Start(t, testAudience)
	ts := serveAuth(t, o)
	prm := `resource_metadata="https://skills.test/.well-known/oauth-protected-resource/mcp"`

	forged := o.Token(t, "alice", "skills:read")
	parts := strings.Split(forged, ".")
	sig := []byte(parts[2])
	// Still base64url, no longer the signature.
	if i := len(sig) / 2; sig[i] == 'A' {
		sig[i] = 'B'
	} else {
		sig[i] = 'A'
	}
	parts[2] = string(sig)
	forged = strings.Join(parts, ".")

	otherOP := oidctest.Start(t, testAudience)
	claims := map[string]any{"iss": o.URL, "aud": testAudience, "sub": "alice", "scope": "skills:read", "exp": time.Now().Add(time.Hour).Unix()}
	crit := o.Sign(t, map[string]any{"crit": []string{"x-must-understand"}, "x-must-understand": true}, claims)
	plainSigned := o.Sign(t, nil, claims)
	for _, tc := range []struct {
		name    string
		header  map[string]string
		status  int
		wantHdr []string
	}{
		{"no token", nil, 401, []string{prm}},
		{"not bearer", map[string]string{"Authorization": "Basic YWxpY2U6c2VjcmV0"}, 401, []string{prm, `error="invalid_request"`}},
		{"garbage", bearer("not.a.jwt"), 401, []string{prm, `error="invalid_token"`}},
		{"oversized", bearer(strings.Repeat("a", 17<<10)), 401, []string{prm, `error="invalid_request"`}},
		{"expired", bearer(o.Token(t, "expired", "skills:read")), 401, []string{`error="invalid_token"`}},
		{"wrong audience", bearer(o.Token(t, "other", "skills:read")), 401, []string{`error="invalid_token"`}},
		{"wrong issuer", bearer(otherOP.Token(t, "alice", "skills:read")), 401, []string{`error="invalid_token"`}},
		{"wrong signature", bearer(forged), 401, []string{`error="invalid_token"`}},
		{"insufficient scope", bearer(o.Token(t, "alice", "skills:other")), 403, []string{`error="insufficient_scope"`, `scope="skills:read"`}},
		{"unknown critical header", bearer(crit), 401, []string{prm, `error="invalid_token"`, `crit`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, ts, initBody, tc.header)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %s, want %d: %s", resp.Status, tc.status, body)
			}
			// A JSON-RPC error answering the request's id (1).
			var msg struct {
				ID    any `json:"id"`
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" || json.Unmarshal(body, &msg) != nil || msg.ID != float64(1) || msg.Error == nil || msg.Error.Message == "" {
				t.Errorf("body (%s) %s: want a JSON-RPC error with the request's id 1", ct, body)
			}
			h := resp.Header.Get("WWW-Authenticate")
			if !strings.HasPrefix(h, "Bearer ") {
				t.Fatalf("WWW-Authenticate %q, want a Bearer challenge", h)
			}
			for _, w := range tc.wantHdr {
				if !strings.Contains(h, w) {
					t.Errorf("WWW-Authenticate %q lacks %s", h, w)
				}
			}
		})
	}

	// A token expired within the leeway is accepted; a token without a
	// critical header, signed the same way, is too (the refusal above is
	// the header's).
	for name, tok := range map[string]string{"expired inside the leeway": o.Token(t, "just-expired", "skills:read"), "signed the same way": plainSigned} {
		if resp, body := post(t, ts, initBody, bearer(tok)); resp.StatusCode != 200 {
			t.Errorf("a token %s: %s %s %s", name, resp.Status, resp.Header.Get("WWW-Authenticate"), trunc(body))
		}
	}
	// The id of a request whose body is not JSON-RPC is null.
	resp, body := post(t, ts, "not json", nil)
	if resp.StatusCode != 401 || !bytes.Contains(body, []byte(`"id":null`)) {
		t.Errorf("unauthenticated non-JSON body: %s %s, want 401 with a null id", resp.Status, body)
	}

	t.Run("metadata", func(t *testing.T) {
		for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
			resp, err := http.Get(ts.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
				Scopes               []string `json:"scopes_supported"`
			}
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if err != nil || m.Resource != testAudience || len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != o.URL || len(m.Scopes) != 1 {
				t.Errorf("GET %s: %+v (%v)", p, m, err)
			}
		}
	})

	t.Run("key rotation", func(t *testing.T) {
		before := o.Token(t, "alice", "skills:read")
		o.Rotate(t)
		after := o.Token(t, "alice", "skills:read")
		for _, tok := range []string{before, after} {
			if resp, body := post(t, ts, initBody, bearer(tok)); resp.StatusCode != 200 {
				t.Fatalf("a token signed by a key the issuer published: %s %s", resp.Status, body)
			}
		}
	})
}

// authSession initializes a session with tok.
func authSession(t *testing.T, ts *testServer, tok string) map[string]string {
	t.Helper()
	resp, body := post(t, ts, initBody, bearer(tok))
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: %s %s", resp.Status, body)
	}
	h := map[string]string{"Authorization": "Bearer " + tok, "Mcp-Session-Id": id, "MCP-Protocol-Version": "2025-11-25"}
	post(t, ts, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h)
	return h
}

func call(t *testing.T, ts *testServer, h map[string]string, method, params string) string {
	t.Helper()
	resp, body := post(t, ts, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, method, params), h)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s %s", method, resp.Status, body)
	}
	return string(body)
}

// TestAuthVisibility: two callers list and read different skills, and a
// hidden skill probed by URI, name or directory gets exactly the answer an
// absent one does.
func TestAuthVisibility(t *testing.T) {
	o := oidctest.Start(t, testAudience)
	ts := serveAuth(t, o)
	alice := authSession(t, ts, o.Token(t, "alice", "skills:read"))                // group ops
	bob := authSession(t, ts, o.Token(t, "bob", "skills:read", "skills:internal")) // scope internal
	const (
		hello   = "skill://public/hello/SKILL.md"
		runbook = "skill://team/runbook/SKILL.md"
		payroll = "skill://internal/payroll/SKILL.md"
	)
	for _, tc := range []struct {
		who    string
		h      map[string]string
		see    []string
		notSee []string
	}{
		{"alice", alice, []string{hello, runbook}, []string{payroll}},
		{"bob", bob, []string{hello, payroll}, []string{runbook}},
	} {
		t.Run(tc.who, func(t *testing.T) {
			list := call(t, ts, tc.h, "skills/list", `{}`)
			res := call(t, ts, tc.h, "resources/list", `{}`)
			for _, u := range tc.see {
				if !strings.Contains(list, u) {
					t.Errorf("skills/list lacks %s: %s", u, list)
				}
				if got := call(t, ts, tc.h, "skills/get", fmt.Sprintf(`{"uri":%q}`, u)); strings.Contains(got, `"error"`) {
					t.Errorf("skills/get %s: %s", u, got)
				}
				if got := call(t, ts, tc.h, "resources/read", fmt.Sprintf(`{"uri":%q}`, u)); strings.Contains(got, `"error"`) {
					t.Errorf("resources/read %s: %s", u, got)
				}
			}
			for _, u := range tc.notSee {
				root := strings.TrimSuffix(u, "/SKILL.md")
				if strings.Contains(list, root) || strings.Contains(res, root) {
					t.Errorf("skills/list or resources/list shows hidden %s: %s %s", u, list, res)
				}
				absent := strings.Replace(u, "/SKILL.md", "-absent/SKILL.md", 1)
				absentRoot := strings.TrimSuffix(absent, "/SKILL.md")
				name := root[strings.LastIndex(root, "/")+1:]
				for _, probe := range []struct{ method, hidden, absent string }{
					// by name: the SEP-2076 and seed-001 compatibility profiles
					{"skills/get", fmt.Sprintf(`{"name":%q}`, name), fmt.Sprintf(`{"name":%q}`, name+"-absent")},
					{"skills/read", fmt.Sprintf(`{"name":%q}`, name), fmt.Sprintf(`{"name":%q}`, name+"-absent")},
					{"skills/get", fmt.Sprintf(`{"uri":%q}`, u), fmt.Sprintf(`{"uri":%q}`, absent)},
					{"resources/read", fmt.Sprintf(`{"uri":%q}`, u), fmt.Sprintf(`{"uri":%q}`, absent)},
					{"resources/directory/read", fmt.Sprintf(`{"uri":%q}`, root), fmt.Sprintf(`{"uri":%q}`, absentRoot)},
				} {
					hid := call(t, ts, tc.h, probe.method, probe.hidden)
					abs := call(t, ts, tc.h, probe.method, probe.absent)
					if !strings.Contains(hid, `"error"`) {
						t.Errorf("%s of hidden %s answered: %s", probe.method, u, hid)
						continue
					}
					// The same answer, but for the URI that was asked.
					if want := strings.ReplaceAll(abs, "-absent", ""); hid != want {
						t.Errorf("%s: hidden and absent differ:\n hidden %s\n absent %s", probe.method, hid, abs)
					}
				}
			}
		})
	}
	if got := call(t, ts, alice, "resources/read", `{"uri":"skill://team/runbook/notes.md"}`); !strings.Contains(got, "secret notes") {
		t.Errorf("alice cannot read her runbook's notes: %s", got)
	}
	if got := call(t, ts, bob, "resources/read", `{"uri":"skill://team/runbook/notes.md"}`); strings.Contains(got, "secret notes") {
		t.Errorf("bob read a hidden skill's file: %s", got)
	}
}

// TestAuthSessionBoundToSubject: a session opened with one subject's token
// cannot be used with another's, even one that is valid.
func TestAuthSessionBoundToSubject(t *testing.T) {
	o := oidctest.Start(t, testAudience)
	ts := serveAuth(t, o)
	alice := authSession(t, ts, o.Token(t, "alice", "skills:read"))
	stolen := map[string]string{"Authorization": "Bearer " + o.Token(t, "bob", "skills:read"), "Mcp-Session-Id": alice["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
	resp, body := post(t, ts, `{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}`, stolen)
	if resp.StatusCode == 200 {
		t.Fatalf("bob used alice's session: %s", body)
	}
	if got := call(t, ts, alice, "skills/list", `{}`); !strings.Contains(got, "team/runbook") {
		t.Errorf("alice's own session: %s", got)
	}
}
