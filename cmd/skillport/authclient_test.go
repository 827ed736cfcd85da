package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/oauth"
	"github.com/skillport/skillport/internal/oidctest"
)

// TestMain lets a test start this package's command as a process of its
// own (the test binary with SKILLPORT_AS_CLI=1), as a server for the
// in-process commands under test.
func TestMain(m *testing.M) {
	switch os.Getenv("SKILLPORT_AS_CLI") {
	case "1":
		os.Exit(run(os.Args[1:]))
	case "conformance":
		os.Exit(conformanceClient())
	}
	os.Exit(m.Run())
}

// startProtectedServe runs `skillport serve --http --auth-*` as a process
// behind a real OpenID provider and returns its /mcp URL and the provider.
func startProtectedServe(t *testing.T) (string, *oidctest.OP) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr
	op := oidctest.Start(t, base+"/mcp")
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "hello"), 0o755)
	os.WriteFile(filepath.Join(dir, "hello", "SKILL.md"), []byte("---\nname: hello\ndescription: Says hello to anyone who asks for a greeting.\n---\nHello.\n"), 0o644)
	startCLIProcess(t, base, "serve", "--http", addr, "--watch=false",
		"--auth-issuer", op.URL, "--auth-audience", base+"/mcp", "--auth-scope", "skills:read", dir)
	return base + "/mcp", op
}

// startCLIProcess runs this package's command with args as a process of
// its own, stopped when the test ends, and waits until base/healthz
// answers.
func startCLIProcess(t *testing.T, base string, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SKILLPORT_AS_CLI=1")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		if i == 200 {
			t.Fatalf("%s did not start: %v", args[0], err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readTokens(t *testing.T) map[string]*oauth.Token {
	t.Helper()
	p, _ := oauth.DefaultStorePath()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Servers map[string]*oauth.Token `json:"servers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f.Servers
}

// TestAuthLoginLsLogout signs in to a real protected `serve --http`
// through a real OpenID provider's login form: login (authorization code,
// PKCE, loopback redirect, RFC 8707 resource), ls with the stored token,
// a refresh when the token expires and when the server refuses it (the
// rotated refresh token saved), status, logout, and ls failing with the
// one command to run.
func TestAuthLoginLsLogout(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	mcpURL, op := startProtectedServe(t)
	login := "skillport auth login " + mcpURL

	_, stderr, code := runCLI(t, "ls", mcpURL)
	if code != 1 || !strings.Contains(stderr, login) {
		t.Fatalf("ls before login: exit %d, stderr %q; want 1 and %q", code, stderr, login)
	}

	var opened []string
	browse := op.Browser(t)
	openBrowser = func(u string) error { opened = append(opened, u); return browse(u) }
	defer func() { openBrowser = oauth.OpenBrowser }()
	op.SetAccessTTL(20 * time.Second) // outside oauth2's 10 s margin: ls right after login keeps it
	_, stderr, code = runCLI(t, "auth", "login", "--client-id", oidctest.CLIClient, mcpURL)
	if code != 0 || len(opened) != 1 {
		t.Fatalf("auth login: exit %d, browser opened %d times, stderr:\n%s", code, len(opened), stderr)
	}
	for _, want := range []string{"code_challenge_method=S256", "resource=" + strings.ReplaceAll(strings.ReplaceAll(mcpURL, ":", "%3A"), "/", "%2F"), "redirect_uri=http%3A%2F%2F127.0.0.1%3A"} {
		if !strings.Contains(opened[0], want) {
			t.Errorf("authorization URL %s lacks %s", opened[0], want)
		}
	}
	if got := op.Resources("/oauth/token"); len(got) == 0 || got[0] != mcpURL {
		t.Errorf("token request resources %q, want %s", got, mcpURL)
	}
	p, _ := oauth.DefaultStorePath()
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file %s: %v %v, want mode 0600", p, fi.Mode(), err)
	}
	tok := readTokens(t)[mcpURL]
	if tok == nil || tok.RefreshToken == "" || tok.Grant != oauth.GrantAuthorizationCode || tok.ClientID != oidctest.CLIClient {
		t.Fatalf("stored token %+v", tok)
	}
	if strings.Contains(stderr, tok.AccessToken) || strings.Contains(stderr, tok.RefreshToken) {
		t.Error("auth login printed a token")
	}

	out, stderr, code := runCLI(t, "ls", mcpURL)
	if code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("ls after login: exit %d\n%s%s", code, out, stderr)
	}
	if now := readTokens(t)[mcpURL]; now.AccessToken != tok.AccessToken {
		t.Errorf("ls refreshed a token that had 20 s to live")
	}

	// verify and pull use the same token.
	if out, stderr, code := runCLI(t, "verify", mcpURL); code != 0 || !strings.Contains(out, "0 failed") {
		t.Errorf("verify after login: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code := runCLI(t, "pull", "--to", t.TempDir(), mcpURL); code != 0 {
		t.Errorf("pull after login: exit %d\n%s%s", code, out, stderr)
	}

	// Expiry: a token within oauth2's 10 s of its expiry is refreshed
	// before use, and the rotated refresh token saved. Its stored expiry is
	// moved in instead of the test waiting out the 20 s the provider gives.
	store := oauth.NewStore(p)
	near := *readTokens(t)[mcpURL]
	near.Expiry = time.Now().Add(5 * time.Second)
	if err := store.Put(&near); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runCLI(t, "ls", mcpURL)
	if code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("ls with an expiring token: exit %d\n%s%s", code, out, stderr)
	}
	tok2 := readTokens(t)[mcpURL]
	if tok2.AccessToken == tok.AccessToken || tok2.RefreshToken == tok.RefreshToken {
		t.Fatalf("the expiring token was not refreshed, or the rotated refresh token not saved")
	}

	// A token the server refuses (401) is refreshed once and retried.
	bad := *tok2
	bad.AccessToken, bad.Expiry = "not-a-token", time.Now().Add(time.Hour)
	if err := store.Put(&bad); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runCLI(t, "ls", mcpURL)
	if code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("ls with a refused token: exit %d\n%s%s", code, out, stderr)
	}
	if tok3 := readTokens(t)[mcpURL]; tok3.AccessToken == "not-a-token" || tok3.RefreshToken == tok2.RefreshToken {
		t.Fatalf("the refused token was not refreshed and saved")
	}

	out, _, code = runCLI(t, "auth", "status")
	fields := strings.Split(strings.TrimSuffix(out, "\n"), "\t")
	if code != 0 || strings.Count(out, "\n") != 1 || len(fields) != 6 || fields[0] != mcpURL || fields[1] != op.URL || fields[3] != oidctest.CLIClient {
		t.Errorf("auth status (piped): exit %d %q", code, out)
	}
	out, _, _ = runCLI(t, "auth", "status", "--json")
	var st []authStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st) != 1 || st[0].State != "valid" || !st[0].Refreshing || !slices.Contains(st[0].Scopes, "skills:read") {
		t.Errorf("auth status --json: %v %s", err, out)
	}
	if now := readTokens(t)[mcpURL]; strings.Contains(out, now.AccessToken) || strings.Contains(out, now.RefreshToken) {
		t.Error("auth status printed a token")
	}

	// A tokens file others can read is refused, saying the chmod.
	os.Chmod(p, 0o644)
	_, stderr, code = runCLI(t, "ls", mcpURL)
	if code != 1 || !strings.Contains(stderr, "chmod 600 "+p) {
		t.Errorf("ls with a 0644 tokens file: exit %d, stderr %q", code, stderr)
	}
	os.Chmod(p, 0o600)

	last := readTokens(t)[mcpURL]
	out, stderr, code = runCLI(t, "auth", "logout", mcpURL)
	if code != 0 || !strings.Contains(out, "Signed out") || strings.Contains(stderr, "not revoked") {
		t.Errorf("auth logout: exit %d %q %q", code, out, stderr)
	}
	// Revoked at the provider: the refresh token no longer works.
	resp, err := http.PostForm(op.URL+"/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {last.RefreshToken}, "client_id": {oidctest.CLIClient}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Error("the refresh token still works after logout")
	}
	_, stderr, code = runCLI(t, "ls", mcpURL)
	if code != 1 || !strings.Contains(stderr, login) {
		t.Errorf("ls after logout: exit %d, stderr %q; want 1 and %q", code, stderr, login)
	}
	if _, _, code := runCLI(t, "auth", "status", mcpURL); code != 1 {
		t.Errorf("auth status after logout: exit %d, want 1", code)
	}
}

// TestAuthClientCredentials: a machine lists a protected server with the
// client credentials grant, the secret read from the environment.
func TestAuthClientCredentials(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	mcpURL, _ := startProtectedServe(t)
	t.Setenv("ALICE_SECRET", "secret")
	out, stderr, code := runCLI(t, "ls", "--client-id", "alice", "--client-secret-env", "ALICE_SECRET", mcpURL)
	if code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("ls as a machine: exit %d\n%s%s", code, out, stderr)
	}
	tok := readTokens(t)[mcpURL]
	if tok == nil || tok.Grant != oauth.GrantClientCredentials || tok.RefreshToken != "" {
		t.Fatalf("stored token %+v", tok)
	}
	p, _ := oauth.DefaultStorePath()
	if data, _ := os.ReadFile(p); strings.Contains(string(data), `"secret"`) {
		t.Error("the client secret was stored")
	}
	// The stored token serves the next run without the secret.
	if out, stderr, code := runCLI(t, "ls", mcpURL); code != 0 || !strings.Contains(out, "hello") {
		t.Errorf("ls with the stored machine token: exit %d\n%s%s", code, out, stderr)
	}
	// A gateway.json upstream's "auth" object: the same machine.
	runCLI(t, "auth", "logout", mcpURL)
	cfg := filepath.Join(t.TempDir(), "gateway.json")
	os.WriteFile(cfg, []byte(`{"mcpServers": {"team": {"url": "`+mcpURL+`", "auth": {"clientId": "alice", "clientSecretEnv": "ALICE_SECRET"}}}}`), 0o644)
	if out, stderr, code := runCLI(t, "ls", "--no-local", "--config", cfg); code != 0 || !strings.Contains(out, "hello") {
		t.Errorf("ls --config with an upstream auth object: exit %d\n%s%s", code, out, stderr)
	}
	t.Setenv("ALICE_SECRET", "wrong")
	runCLI(t, "auth", "logout", mcpURL)
	if _, stderr, code := runCLI(t, "auth", "login", "--client-credentials", "--client-id", "alice", "--client-secret-env", "ALICE_SECRET", mcpURL); code != 1 || !strings.Contains(stderr, "/oauth/token") {
		t.Errorf("auth login with a wrong secret: exit %d, stderr %q", code, stderr)
	}
}

// TestGatewayProtectedUpstream: the gateway reaches a protected upstream
// as the machine its gateway.json "auth" object names, and republishes
// its skill.
func TestGatewayProtectedUpstream(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	mcpURL, _ := startProtectedServe(t)
	cfg := filepath.Join(t.TempDir(), "gateway.json")
	os.WriteFile(cfg, []byte(`{"mcpServers": {"team": {"url": "`+mcpURL+`", "auth": {"clientId": "alice", "clientSecretEnv": "ALICE_SECRET"}}},
		"approvals": {"allow": [{"origin": "*", "skill": "*"}]}}`), 0o644)
	cmd := exec.Command(os.Args[0], "gateway", "--config", cfg)
	cmd.Env = append(os.Environ(), "SKILLPORT_AS_CLI=1", "ALICE_SECRET=secret")
	cmd.Stderr = os.Stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; ; i++ {
		res, err := s.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range res.Prompts {
			names = append(names, p.Name)
		}
		if strings.Contains(strings.Join(names, " "), "hello") {
			break
		}
		if i == 50 {
			t.Fatalf("the gateway's prompts %q lack the protected upstream's skill", names)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
