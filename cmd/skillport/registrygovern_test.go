package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/oauth"
	"github.com/skillport/skillport/internal/oidctest"
	"github.com/skillport/skillport/internal/skilltest"
)

// TestPublishOverHTTP: a replica started with --accept-publish takes
// publishes and reviews over HTTP: a machine with client credentials in
// the environment publishes its namespace and is refused another's; a
// person signed in with auth login approves; review-mode and the audit
// log need the admin role; no database credentials are used but the
// replica's.
func TestPublishOverHTTP(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(clientIDEnv, "")
	t.Setenv(clientSecretEnv, "")
	t.Setenv(registryEnv, "")
	dsn := migratedRegistry(t, "govern")
	// Accepting changes needs tokens and the rules that grant roles.
	if _, stderr, code := runCLI(t, "serve", "--http", "127.0.0.1:0", "--accept-publish", dsn); code != 2 || !strings.Contains(stderr, "--accept-publish needs --http, --auth-issuer and --auth-rules") {
		t.Fatalf("serve --accept-publish without auth: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "serve", "--accept-publish", "./testdata"); code != 2 || !strings.Contains(stderr, "--accept-publish applies to a registry") {
		t.Fatalf("serve --accept-publish of a directory: exit %d, %s", code, stderr)
	}

	addr := freeAddr(t)
	base := "http://" + addr
	mcpURL := base + "/mcp"
	op := oidctest.Start(t, mcpURL)
	rules := filepath.Join(t.TempDir(), "rules.jsonc")
	os.WriteFile(rules, []byte(`{"rules": [
		{"group": "ops", "roles": ["publish", "read"], "paths": ["acme/ops"]},
		{"subject": "`+oidctest.UserSubject+`", "roles": ["review"], "paths": ["acme"]},
		{"scope": "skills:admin", "roles": ["admin"]},
	]}`), 0o644)
	startCLIProcess(t, base, "serve", "--http", addr, "--accept-publish", "--auth-issuer", op.URL, "--auth-audience", mcpURL, "--auth-rules", rules, dsn)

	dir := skilltest.WriteTree(t, map[string]string{"notes/SKILL.md": "---\nname: notes\ndescription: Notes published over HTTP.\n---\none\n"})
	// Without a token: the command to sign in.
	if _, stderr, code := runCLI(t, "publish", mcpURL, "--prefix", "acme/ops", dir); code != 1 || !strings.Contains(stderr, "skillport auth login "+mcpURL) {
		t.Fatalf("publish without signing in: exit %d, %s", code, stderr)
	}
	// A machine: client credentials from the environment.
	t.Setenv(clientIDEnv, "alice")
	t.Setenv(clientSecretEnv, "secret")
	if out, stderr, code := runCLI(t, "publish", mcpURL, "--prefix", "acme/ops", dir); code != 0 || !strings.Contains(out, "+ acme/ops/notes v1") {
		t.Fatalf("alice publishing acme/ops: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code := runCLI(t, "publish", mcpURL, "--prefix", "acme/sales", dir); code != 1 || !strings.Contains(stderr, `namespace "acme/sales" needs the publish role`) || !strings.Contains(stderr, "HTTP 403") {
		t.Fatalf("alice publishing acme/sales: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "registry", "review-mode", "--registry", mcpURL, "acme", "enforce"); code != 1 || !strings.Contains(stderr, "admin role") {
		t.Fatalf("review-mode without the admin role: exit %d, %s", code, stderr)
	}
	// The stored token lacks skills:admin: sign in again with it.
	p, _ := oauth.DefaultStorePath()
	os.Remove(p)
	if out, stderr, code := runCLI(t, "registry", "review-mode", "--registry", mcpURL, "--scope", "skills:admin", "acme", "enforce"); code != 0 || !strings.Contains(out, "review is enforce in namespace acme") {
		t.Fatalf("review-mode as admin: exit %d\n%s%s", code, out, stderr)
	}
	skilltest.WriteFile(t, filepath.Join(dir, "notes", "SKILL.md"), "---\nname: notes\ndescription: Notes published over HTTP.\n---\ntwo\n")
	if out, stderr, code := runCLI(t, "publish", mcpURL, "--prefix", "acme/ops", dir); code != 0 || !strings.Contains(out, "pending review, not served") {
		t.Fatalf("publishing under enforced review: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code := runCLI(t, "registry", "approve", "--registry", mcpURL, "acme/ops/notes", "2"); code != 1 || !strings.Contains(stderr, "own version") {
		t.Fatalf("alice approving her own version: exit %d, %s", code, stderr)
	}

	// A person signed in with auth login reviews.
	t.Setenv(clientIDEnv, "")
	t.Setenv(clientSecretEnv, "")
	os.Remove(p)
	openBrowser = op.Browser(t)
	defer func() { openBrowser = oauth.OpenBrowser }()
	if _, stderr, code := runCLI(t, "auth", "login", "--client-id", oidctest.CLIClient, mcpURL); code != 0 {
		t.Fatalf("auth login: %s", stderr)
	}
	if _, stderr, code := runCLI(t, "registry", "approve", "--registry", mcpURL, "--digest", "sha256:"+strings.Repeat("ab", 32), "acme/ops/notes", "2"); code != 1 || !strings.Contains(stderr, "review the version again") {
		t.Fatalf("a stale approval: exit %d, %s", code, stderr)
	}
	if out, stderr, code := runCLI(t, "registry", "approve", "--registry", mcpURL, "acme/ops/notes", "2"); code != 0 || !strings.Contains(out, "acme/ops/notes version 2 approved (sha256:") {
		t.Fatalf("approving: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code := runCLI(t, "registry", "versions", "--json", "--registry", mcpURL, "acme/ops/notes")
	var vs []versionJSON
	if code != 0 || json.Unmarshal([]byte(out), &vs) != nil || len(vs) != 2 || vs[1].State != "approved" || !vs[1].Current || vs[1].ReviewedBy != oidctest.UserSubject || vs[1].PublishedBy != "alice" {
		t.Fatalf("versions over HTTP: exit %d\n%s%s", code, out, stderr)
	}

	// The web catalog shows the versions' states to those who see the
	// skill, and nothing to others.
	page := func(tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/s/acme/ops/notes/", nil)
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
	if code, body := page(op.Token(t, "alice")); code != http.StatusOK || !strings.Contains(body, `<tr class="state-approved"><td class="num">2 <strong>served</strong>`) || !strings.Contains(body, `<tr class="state-published"><td class="num">1</td>`) {
		t.Errorf("the skill page for alice: %d\n%s", code, body)
	}
	if code, _ := page(op.Token(t, "bob")); code != http.StatusNotFound {
		t.Errorf("the skill page for bob, who may not see it: %d", code)
	}

	// The audit log, as JSON lines, from the database (an operator).
	out, stderr, code = runCLI(t, "registry", "audit", "--json", "--registry", dsn)
	if code != 0 {
		t.Fatalf("registry audit: %s", stderr)
	}
	var actions []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct{ Action, Who, Outcome, From string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		actions = append(actions, r.Action+":"+r.Who+":"+r.Outcome)
	}
	want := "roles:replica@" + hostname() + ":ok publish:alice:ok publish:alice:refused review-mode:alice:refused review-mode:alice:ok publish:alice:ok approve:alice:refused approve:" + oidctest.UserSubject + ":refused approve:" + oidctest.UserSubject + ":ok"
	if got := strings.Join(actions, " "); got != want {
		t.Errorf("audit:\n got %s\nwant %s", got, want)
	}
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
