package main

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/oidctest"
	"github.com/skillport/skillport/internal/pgtest"
	"github.com/skillport/skillport/internal/sigstoretest"
	"github.com/skillport/skillport/internal/skilltest"
)

// TestPublishSignedOverHTTP: publish over HTTP to a real serve
// --accept-publish replica signs as a publish into the database does:
// with --sign-key, the bundles travel with the archive, the replica stores
// them, and serves them in skills/list (verify --trusted-key accepts, and
// refuses another key), on the skill's web page and in the discovery
// document; with --keyless (the test Fulcio and Rekor), verify with a
// policy naming the identity accepts. A publish without a signer still
// publishes, unsigned.
func TestPublishSignedOverHTTP(t *testing.T) {
	fakeHome(t)
	noAmbientToken(t)
	t.Setenv(registryEnv, "")
	pg, err := pgtest.Start(t.TempDir())
	if err != nil {
		t.Fatalf("the test needs PostgreSQL, which could not start: %v", err)
	}
	t.Cleanup(func() { pg.Stop() })
	dsn, err := pg.NewDatabase("pubsign")
	if err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, "registry", "migrate", "--registry", dsn); code != 0 {
		t.Fatalf("registry migrate: %s", stderr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr
	mcpURL := base + "/mcp"
	op := oidctest.Start(t, mcpURL)
	files := t.TempDir()
	rules := filepath.Join(files, "rules.jsonc")
	skilltest.WriteFile(t, rules, `{"rules": [{"group": "ops", "roles": ["publish", "read"], "paths": ["acme/ops"]}]}`)
	startCLIProcess(t, base, "serve", "--http", addr, "--accept-publish", "--auth-issuer", op.URL, "--auth-audience", mcpURL, "--auth-rules", rules, dsn)
	// alice (group ops) publishes with client credentials; verify then
	// reads with the token the publish stored.
	t.Setenv(clientIDEnv, "alice")
	t.Setenv(clientSecretEnv, "secret")

	dir := skilltest.WriteTree(t, map[string]string{
		"notes/SKILL.md":       "---\nname: notes\ndescription: Notes published signed over HTTP.\n---\none\n",
		"notes/scripts/run.sh": "echo one\n",
	})
	key, pub := keyFiles(t, files, "acme")
	_, otherPub := keyFiles(t, files, "other")
	t.Setenv("SKILLPORT_KEY_PASSWORD", "pw")
	fetch := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+op.Token(t, "alice"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	get := func(path string) string {
		t.Helper()
		code, body := fetch(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, body)
		}
		return body
	}
	// changed waits until the replica serves other skills than in doc, its
	// discovery document before a publish: it follows the database's
	// notifications, and reloads a moment after the publish answered.
	doc := func() string { _, d := fetch("/.well-known/agent-skills/index.json"); return d }
	changed := func(before string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); doc() == before; {
			if time.Now().After(deadline) {
				t.Fatalf("the replica still serves, 10s after the publish:\n%s", before)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	before := doc()
	if out, stderr, code := runCLI(t, "publish", "--sign-key", key, mcpURL, "--prefix", "acme/ops", dir); code != 0 || !strings.Contains(out, "+ acme/ops/notes v1") {
		t.Fatalf("publish --sign-key over HTTP: exit %d\n%s%s", code, out, stderr)
	}
	changed(before)
	out, stderr, code := runCLI(t, "verify", "--trusted-key", pub, mcpURL)
	if code != 0 || !strings.Contains(out, "1 skill verified, 0 failed") || !strings.Contains(out+stderr, "signature verified: signed by key ") {
		t.Errorf("verify --trusted-key of the replica: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code := runCLI(t, "verify", "--trusted-key", otherPub, mcpURL); code != 1 || !strings.Contains(out+stderr, "which is not a trusted key") {
		t.Errorf("verify with another key: exit %d\n%s%s", code, out, stderr)
	}
	if page := get("/s/acme/ops/notes/"); !strings.Contains(page, "signed by key ") {
		t.Errorf("the skill page names no signer:\n%s", page)
	}
	if d := get("/.well-known/agent-skills/index.json"); !strings.Contains(d, `"io.skillport/signature":{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"`) {
		t.Errorf("the discovery document carries no bundle:\n%s", d)
	}

	// Keyless, with an ID token for the test Fulcio.
	sop := oidctest.Start(t, sigstoretest.Audience)
	ss := sigstoretest.Start(t, sop.URL)
	tokenFile := filepath.Join(files, "token")
	skilltest.WriteFile(t, tokenFile, sigstoretest.IDToken(t, sop, "release@acme.example")+"\n")
	skilltest.WriteFile(t, filepath.Join(dir, "notes", "SKILL.md"), "---\nname: notes\ndescription: Notes published signed over HTTP.\n---\ntwo\n")
	before = doc()
	if out, stderr, code := runCLI(t, "publish", "--keyless", "--oidc-token-file", tokenFile, "--fulcio-url", ss.FulcioURL, "--rekor-url", ss.RekorURL, mcpURL, "--prefix", "acme/ops", dir); code != 0 || !strings.Contains(out, "~ acme/ops/notes v2") {
		t.Fatalf("publish --keyless over HTTP: exit %d\n%s%s", code, out, stderr)
	}
	changed(before)
	skilltest.WriteFile(t, filepath.Join(files, "trusted_root.json"), string(ss.TrustedRoot(t)))
	policy := filepath.Join(files, "policy.json")
	skilltest.WriteFile(t, policy, `{"trustedRoot": "trusted_root.json", "origins": {"acme": {"keyless": [{"issuer": "`+sop.URL+`", "subject": "release@acme\\.example"}]}}}`)
	out, stderr, code = runCLI(t, "verify", "--trust-policy", policy, "--label", "acme", mcpURL)
	if code != 0 || !strings.Contains(out, "1 skill verified, 0 failed") || !strings.Contains(out+stderr, "signed by release@acme.example (issuer "+sop.URL+")") {
		t.Errorf("verify of the keyless publish: exit %d\n%s%s", code, out, stderr)
	}

	// Without a signer: published, unsigned (a trusted key now refuses it).
	skilltest.WriteFile(t, filepath.Join(dir, "notes", "SKILL.md"), "---\nname: notes\ndescription: Notes published signed over HTTP.\n---\nthree\n")
	before = doc()
	if out, stderr, code := runCLI(t, "publish", mcpURL, "--prefix", "acme/ops", dir); code != 0 || !strings.Contains(out, "~ acme/ops/notes v3") {
		t.Fatalf("an unsigned publish over HTTP: exit %d\n%s%s", code, out, stderr)
	}
	changed(before)
	if out, stderr, code := runCLI(t, "verify", "--trusted-key", pub, mcpURL); code != 1 || !strings.Contains(out+stderr, "unsigned") {
		t.Errorf("verify of the unsigned version: exit %d\n%s%s", code, out, stderr)
	}
}
