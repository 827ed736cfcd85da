package main

import (
	"io"
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
// policy naming the identity accepts. The replica requires signatures
// (serve --require-signed-publish, the same policy file): an unsigned
// publish, or one signed by another key, is refused.
func TestPublishSignedOverHTTP(t *testing.T) {
	fakeHome(t)
	noAmbientToken(t)
	t.Setenv(registryEnv, "")
	dsn := migratedRegistry(t, "pubsign")
	addr := freeAddr(t)
	base := "http://" + addr
	mcpURL := base + "/mcp"
	op := oidctest.Start(t, mcpURL)
	files := t.TempDir()
	rules := filepath.Join(files, "rules.jsonc")
	skilltest.WriteFile(t, rules, `{"rules": [{"group": "ops", "roles": ["publish", "read"], "paths": ["acme/ops"]}]}`)
	key, pub := keyFiles(t, files, "acme")
	otherKey, otherPub := keyFiles(t, files, "other")
	t.Setenv("SKILLPORT_KEY_PASSWORD", "pw")
	sop := oidctest.Start(t, sigstoretest.Audience)
	ss := sigstoretest.Start(t, sop.URL)
	tokenFile := filepath.Join(files, "token")
	skilltest.WriteFile(t, tokenFile, sigstoretest.IDToken(t, sop, "release@acme.example")+"\n")
	// One trust policy: the replica requires its signers of publishes into
	// acme/..., and verify (--label acme) trusts them.
	skilltest.WriteFile(t, filepath.Join(files, "trusted_root.json"), string(ss.TrustedRoot(t)))
	policy := filepath.Join(files, "policy.json")
	skilltest.WriteFile(t, policy, `{"trustedRoot": "trusted_root.json", "origins": {"acme": {"keys": ["acme.pub"], "keyless": [{"issuer": "`+sop.URL+`", "subject": "release@acme\\.example"}]}}}`)
	if _, stderr, code := runCLI(t, "serve", "--require-signed-publish", policy, "./testdata"); code != 2 || !strings.Contains(stderr, "serve: --require-signed-publish applies to --accept-publish") {
		t.Fatalf("--require-signed-publish without --accept-publish: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "serve", "--http", addr, "--accept-publish", "--auth-issuer", op.URL, "--auth-audience", mcpURL, "--auth-rules", rules, "--require-signed-publish", rules, dsn); code != 2 || !strings.Contains(stderr, "serve: --require-signed-publish "+rules+": not a trust policy") {
		t.Fatalf("--require-signed-publish of a file that is no policy: exit %d, %s", code, stderr)
	}
	startCLIProcess(t, base, "serve", "--http", addr, "--accept-publish", "--auth-issuer", op.URL, "--auth-audience", mcpURL, "--auth-rules", rules, "--require-signed-publish", policy, dsn)
	// alice (group ops) publishes with client credentials; verify then
	// reads with the token the publish stored.
	t.Setenv(clientIDEnv, "alice")
	t.Setenv(clientSecretEnv, "secret")

	dir := skilltest.WriteTree(t, map[string]string{
		"notes/SKILL.md":       "---\nname: notes\ndescription: Notes published signed over HTTP.\n---\none\n",
		"notes/scripts/run.sh": "echo one\n",
	})
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
	skilltest.WriteFile(t, filepath.Join(dir, "notes", "SKILL.md"), "---\nname: notes\ndescription: Notes published signed over HTTP.\n---\ntwo\n")
	before = doc()
	if out, stderr, code := runCLI(t, "publish", "--keyless", "--oidc-token-file", tokenFile, "--fulcio-url", ss.FulcioURL, "--rekor-url", ss.RekorURL, mcpURL, "--prefix", "acme/ops", dir); code != 0 || !strings.Contains(out, "~ acme/ops/notes v2") {
		t.Fatalf("publish --keyless over HTTP: exit %d\n%s%s", code, out, stderr)
	}
	changed(before)
	out, stderr, code = runCLI(t, "verify", "--trust-policy", policy, "--label", "acme", mcpURL)
	if code != 0 || !strings.Contains(out, "1 skill verified, 0 failed") || !strings.Contains(out+stderr, "signed by release@acme.example (issuer "+sop.URL+")") {
		t.Errorf("verify of the keyless publish: exit %d\n%s%s", code, out, stderr)
	}

	// This replica requires signatures: unsigned, or signed by another
	// key, is refused and nothing is published.
	skilltest.WriteFile(t, filepath.Join(dir, "notes", "SKILL.md"), "---\nname: notes\ndescription: Notes published signed over HTTP.\n---\nthree\n")
	if out, stderr, code := runCLI(t, "publish", mcpURL, "--prefix", "acme/ops", dir); code != 1 || !strings.Contains(stderr, `skill://acme/ops/notes/SKILL.md: signature refused: unsigned, and this replica requires signed publishes in namespace "acme/ops"; publish with --sign-key FILE or --keyless (HTTP 422)`) {
		t.Errorf("an unsigned publish to a replica requiring signatures: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code := runCLI(t, "publish", "--sign-key", otherKey, mcpURL, "--prefix", "acme/ops", dir); code != 1 || !strings.Contains(stderr, "which is not a trusted key (this replica requires signed publishes") {
		t.Errorf("a publish signed by another key: exit %d\n%s%s", code, out, stderr)
	}
}

// migratedRegistry is the DSN of a new, migrated registry database in a
// PostgreSQL of the test's own.
func migratedRegistry(t *testing.T, name string) string {
	t.Helper()
	pg, err := pgtest.Start(t.TempDir())
	if err != nil {
		t.Fatalf("the test needs PostgreSQL, which could not start: %v", err)
	}
	t.Cleanup(func() { pg.Stop() })
	dsn, err := pg.NewDatabase(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, "registry", "migrate", "--registry", dsn); code != 0 {
		t.Fatalf("registry migrate: %s", stderr)
	}
	return dsn
}
