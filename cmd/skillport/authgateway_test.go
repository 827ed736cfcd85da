package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/oidctest"
)

// TestGatewayAuth runs `skillport gateway --http` behind a real OpenID
// provider with visibility rules: the MCP path needs a token, and each
// caller's prompts, tools and resources show only what the rules grant.
func TestGatewayAuth(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr
	op := oidctest.Start(t, base+"/mcp")

	dir := t.TempDir()
	for p, md := range map[string]string{
		"public/hello/SKILL.md":     "---\nname: hello\ndescription: Says hello to anyone who asks for a greeting.\n---\n",
		"internal/payroll/SKILL.md": "---\nname: payroll\ndescription: Internal payroll procedures for finance.\n---\n",
	} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(md), 0o644)
	}
	cfg := filepath.Join(t.TempDir(), "gateway.json")
	os.WriteFile(cfg, []byte(`{"skillDirs": [{"label": "team", "path": "`+dir+`"}]}`), 0o644)
	rules := filepath.Join(t.TempDir(), "rules.jsonc")
	os.WriteFile(rules, []byte(`{"rules": [
		{"anyone": true, "paths": ["team/public"]},
		{"scope": "skills:internal", "paths": ["team/internal"]},
	]}`), 0o644)

	resetFlags(rootCmd)
	ctx, cancel := context.WithCancel(context.Background())
	gatewayCmd.SetContext(ctx)
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"gateway", "--config", cfg, "--http", addr,
			"--auth-issuer", op.URL, "--auth-audience", base + "/mcp", "--auth-rules", rules})
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("gateway exited %d", code)
			}
		case <-time.After(10 * time.Second):
			t.Error("gateway did not stop")
		}
		gatewayCmd.SetContext(context.Background())
	}()
	for i := 0; ; i++ {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if i == 200 {
			t.Fatalf("gateway did not get ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(tok, method, params string) (int, string) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + meta + `}}`
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if method == "tools/call" {
			req.Header.Set("Mcp-Name", "search_skills")
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("", "prompts/list", ""); code != 401 {
		t.Fatalf("no token: %d %s", code, body)
	}
	alice := op.Token(t, "alice", "skills:read")
	bob := op.Token(t, "bob", "skills:read", "skills:internal")
	for _, tc := range []struct {
		who, tok string
		payroll  bool
	}{{"alice", alice, false}, {"bob", bob, true}} {
		var all strings.Builder
		for _, m := range []struct{ method, params string }{
			{"prompts/list", ""},
			{"resources/list", ""},
			{"tools/call", `"name":"search_skills","arguments":{"query":"finance procedures greeting"},`},
		} {
			code, body := post(tc.tok, m.method, m.params)
			if code != 200 {
				t.Fatalf("%s: %s: %d %s", tc.who, m.method, code, body)
			}
			all.WriteString(body)
		}
		if got := strings.Contains(all.String(), "payroll"); got != tc.payroll || !strings.Contains(all.String(), "hello") {
			t.Errorf("%s: shown payroll %v, want %v: %s", tc.who, got, tc.payroll, all.String())
		}
	}
}
