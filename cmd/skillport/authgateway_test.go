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

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/internal/oidctest"
)

// TestGatewayAuth runs `skillport gateway --http` behind a real OpenID
// provider with visibility rules: the MCP path needs a token, and each
// caller's prompts, tools and resources show only what the rules grant.
func TestGatewayAuth(t *testing.T) {
	addr, base, op := authProvider(t)
	dir := t.TempDir()
	writeSkills(t, dir, map[string]string{
		"public/hello/SKILL.md":     "---\nname: hello\ndescription: Says hello to anyone who asks for a greeting.\n---\n",
		"internal/payroll/SKILL.md": "---\nname: payroll\ndescription: Internal payroll procedures for finance.\n---\n",
	})
	cfg := filepath.Join(t.TempDir(), "gateway.json")
	os.WriteFile(cfg, []byte(`{"skillDirs": [{"label": "team", "path": "`+dir+`"}]}`), 0o644)
	rules := filepath.Join(t.TempDir(), "rules.jsonc")
	os.WriteFile(rules, []byte(`{"rules": [
		{"anyone": true, "paths": ["team/public"]},
		{"scope": "skills:internal", "paths": ["team/internal"]},
	]}`), 0o644)

	runServing(t, gatewayCmd, base+"/readyz", "gateway", "--config", cfg, "--http", addr,
		"--auth-issuer", op.URL, "--auth-audience", base+"/mcp", "--auth-rules", rules)
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

// runServing runs the command of args (cmd is its cobra command) until the
// test ends, once ready answers 200; the command must then exit 0.
func runServing(t *testing.T, cmd *cobra.Command, ready string, args ...string) {
	t.Helper()
	resetFlags(rootCmd)
	ctx, cancel := context.WithCancel(context.Background())
	cmd.SetContext(ctx) // cobra keeps a subcommand's context from an earlier run
	done := make(chan int, 1)
	go func() { done <- run(args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("%s exited %d", args[0], code)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not stop", args[0])
		}
		cmd.SetContext(context.Background())
	})
	for i := 0; ; i++ {
		resp, err := http.Get(ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if i == 200 {
			t.Fatalf("%s did not get ready: %v", args[0], err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// authProvider picks a free loopback address for the server under test and
// starts a real OpenID provider issuing tokens for its /mcp.
func authProvider(t *testing.T) (addr, base string, op *oidctest.OP) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	base = "http://" + addr
	return addr, base, oidctest.Start(t, base+"/mcp")
}

// writeSkills writes files (path -> content) under dir.
func writeSkills(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, md := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
