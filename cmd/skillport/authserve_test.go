package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServeAuthFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "rules.jsonc")
	os.WriteFile(bad, []byte("{\"rules\": [\n  {\"paths\": [\"x\"]}\n]}"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--http", "127.0.0.1:0", "--auth-rules", bad, dir}, 2, "need --auth-issuer"},
		{[]string{"serve", "--auth-issuer", "http://127.0.0.1:1", "--auth-audience", "http://x/mcp", dir}, 2, "--http only"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--auth-issuer", "http://127.0.0.1:1", dir}, 2, "needs --auth-audience"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--auth-issuer", "http://127.0.0.1:1", "--auth-audience", "http://x/mcp", "--auth-rules", bad, dir}, 2, "rules[0] names no caller"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--auth-issuer", "http://127.0.0.1:1", "--auth-audience", "http://x/mcp", dir}, 1, "http://127.0.0.1:1/.well-known/"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--auth-issuer", "http://127.0.0.1:1", "--auth-audience", "http://x/mcp", "--auth-introspection-client", "rs", dir}, 2, "SKILLPORT_INTROSPECTION_SECRET"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--auth-issuer", "http://127.0.0.1:1", "--auth-audience", "http://x/mcp", "--auth-introspection-url", "http://127.0.0.1:1/i", dir}, 2, "need --auth-introspection-client"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestServeAuth runs `skillport serve --http` behind a real OpenID
// provider: the MCP path needs a token, and MCP answers and the web
// catalog show each caller only what the rules grant it.
func TestServeAuth(t *testing.T) {
	addr, base, op := authProvider(t)
	dir := t.TempDir()
	writeSkills(t, dir, map[string]string{
		"public/hello/SKILL.md":     "---\nname: hello\ndescription: Says hello to anyone who asks for a greeting.\n---\n",
		"team/runbook/SKILL.md":     "---\nname: runbook\ndescription: The ops team's runbook for incidents.\nmetadata:\n  team: ops\n---\n",
		"internal/payroll/SKILL.md": "---\nname: payroll\ndescription: Internal payroll procedures for finance.\n---\n",
	})
	rules := filepath.Join(t.TempDir(), "rules.jsonc")
	os.WriteFile(rules, []byte(`{"rules": [
		{"anyone": true, "paths": ["public"]}, // even without a token
		{"group": "ops", "metadata": {"team": "ops"}},
		{"scope": "skills:internal", "paths": ["internal"]},
	]}`), 0o644)

	secret := filepath.Join(t.TempDir(), "introspection-secret")
	os.WriteFile(secret, []byte("secret\n"), 0o600)

	runServing(t, serveCmd, base+"/healthz", "serve", "--http", addr, "--no-web=false", "--watch=false",
		"--auth-issuer", op.URL, "--auth-audience", base+"/mcp", "--auth-scope", "skills:read", "--auth-rules", rules,
		"--auth-introspection-client", "rs", "--auth-introspection-secret-file", secret, dir)

	do := func(method, path, tok, body string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

	resp, body := do("POST", "/mcp", "", initBody)
	if want := fmt.Sprintf(`resource_metadata=%q`, base+"/.well-known/oauth-protected-resource/mcp"); resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), want) {
		t.Fatalf("no token: %s %q %s", resp.Status, resp.Header.Get("WWW-Authenticate"), body)
	}
	if _, body := do("GET", "/.well-known/oauth-protected-resource/mcp", "", ""); !strings.Contains(body, `"resource":"`+base+`/mcp"`) || !strings.Contains(body, op.URL) {
		t.Errorf("protected resource metadata: %s", body)
	}

	alice := op.Token(t, "alice", "skills:read")
	resp, body = do("POST", "/mcp", alice, initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize with a token: %s %s", resp.Status, body)
	}
	do("POST", "/mcp", alice, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", sid)
	_, list := do("POST", "/mcp", alice, `{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}`, "Mcp-Session-Id", sid)
	if !strings.Contains(list, "team/runbook") || !strings.Contains(list, "public/hello") || strings.Contains(list, "payroll") || !strings.Contains(list, `"cacheScope":"private"`) {
		t.Errorf("alice's skills/list: %s", list)
	}

	// A stateless (2026-07-28) request, no session: the caller is the
	// token's all the same.
	bob := op.Token(t, "bob", "skills:read", "skills:internal")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/skills":{}}}}`
	resp, list = do("POST", "/mcp", bob, `{"jsonrpc":"2.0","id":3,"method":"skills/list","params":{`+meta+`}}`, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "skills/list")
	if resp.StatusCode != 200 || !strings.Contains(list, "internal/payroll") || strings.Contains(list, "runbook") || !strings.Contains(list, `"cacheScope":"private"`) {
		t.Errorf("bob's stateless skills/list: %s %s", resp.Status, list)
	}

	// An opaque token (group ops), explained by introspection.
	opaque := op.Token(t, "opaque", "skills:read")
	resp, body = do("POST", "/mcp", opaque, `{"jsonrpc":"2.0","id":4,"method":"skills/list","params":{`+meta+`}}`, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "skills/list")
	if resp.StatusCode != 200 || !strings.Contains(body, "team/runbook") || strings.Contains(body, "payroll") {
		t.Errorf("skills/list with an opaque token: %s %s", resp.Status, body)
	}

	for _, tc := range []struct {
		who, tok    string
		see, notSee []string
	}{
		{"anonymous", "", []string{"hello"}, []string{"runbook", "payroll"}},
		{"alice", alice, []string{"hello", "runbook"}, []string{"payroll"}},
		{"bob", bob, []string{"hello", "payroll"}, []string{"runbook"}},
	} {
		paths := map[string]string{"runbook": "team/runbook", "payroll": "internal/payroll", "hello": "public/hello"}
		for _, s := range tc.see {
			if resp, body := do("GET", "/raw/"+paths[s]+"/SKILL.md", tc.tok, ""); resp.StatusCode != 200 {
				t.Errorf("%s cannot fetch visible %s: %s %s", tc.who, s, resp.Status, body)
			}
		}
		for _, s := range tc.notSee {
			// A hidden skill's page and raw file answer as an absent one's.
			for _, path := range []string{"/s/", "/raw/"} {
				p := paths[s]
				hid, hb := do("GET", path+p+"/SKILL.md", tc.tok, "")
				abs, ab := do("GET", path+p+"-absent/SKILL.md", tc.tok, "")
				if hid.StatusCode != abs.StatusCode || hid.StatusCode == 200 || strings.Contains(hb, "description") && !strings.Contains(ab, "description") {
					t.Errorf("%s: %s%s: %s, absent %s", tc.who, path, p, hid.Status, abs.Status)
				}
			}
		}
		resp, idx := do("GET", "/.well-known/agent-skills/index.json", tc.tok, "")
		// The answer depends on the token: no shared cache may keep it.
		if resp.Header.Get("Cache-Control") != "private" || !strings.Contains(resp.Header.Get("Vary"), "Authorization") {
			t.Errorf("%s's web index: Cache-Control %q, Vary %q; want private and Authorization", tc.who, resp.Header.Get("Cache-Control"), resp.Header.Get("Vary"))
		}
		for _, s := range tc.see {
			if !strings.Contains(idx, s) {
				t.Errorf("%s's web index lacks %s: %s", tc.who, s, idx)
			}
		}
		for _, s := range tc.notSee {
			if strings.Contains(idx, s) {
				t.Errorf("%s's web index shows %s: %s", tc.who, s, idx)
			}
		}
	}
}
