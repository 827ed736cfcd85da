package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/ocitest"
	"github.com/skillport/skillport/internal/oidctest"
	"github.com/skillport/skillport/internal/signature"
	"github.com/skillport/skillport/internal/sigstoretest"
	"github.com/skillport/skillport/internal/skilltest"
)

// noAmbientToken clears the environment's ID tokens, so that a test
// running in CI does not sign with the CI's identity.
func noAmbientToken(t *testing.T) {
	for _, k := range []string{signature.EnvIDToken, signature.EnvActionsRequestURL, signature.EnvActionsRequestTok} {
		t.Setenv(k, "")
	}
}

// TestKeylessSignServeVerify: skillport sign --keyless against the test
// Fulcio and Rekor, with an ID token of a real OpenID provider; a real
// skillport serve carries the bundles; a host whose trust policy names
// the identity (issuer and subject pattern) and the test trusted root
// accepts them offline, and one naming another subject or issuer refuses.
func TestKeylessSignServeVerify(t *testing.T) {
	bin := skilltest.Binary(t)
	fakeHome(t)
	noAmbientToken(t)
	op := oidctest.Start(t, sigstoretest.Audience)
	ss := sigstoretest.Start(t, op.URL)
	dir := skilltest.WriteTree(t, map[string]string{
		"pdf/SKILL.md":       "---\nname: pdf\ndescription: Read PDFs\n---\nRun scripts/run.sh.\n",
		"pdf/scripts/run.sh": "echo pdf\n",
		"docx/SKILL.md":      "---\nname: docx\ndescription: Read DOCX\n---\nBody.\n",
	})
	files := t.TempDir()
	tokenFile := filepath.Join(files, "token")
	skilltest.WriteFile(t, tokenFile, sigstoretest.IDToken(t, op, "release@acme.example")+"\n")
	services := []string{"--fulcio-url", ss.FulcioURL, "--rekor-url", ss.RekorURL}

	out, errOut, code := runCLI(t, append([]string{"sign", "--keyless", "--oidc-token-file", tokenFile, dir}, services...)...)
	identity := "release@acme.example (issuer " + op.URL + ")"
	if code != 0 || !strings.Contains(out, "signed 2 skills keyless as "+identity+" into ") ||
		!strings.Contains(errOut, "skillport: sign: signing keyless (--keyless) as "+identity+", ID token from --oidc-token-file ") {
		t.Fatalf("sign --keyless: exit %d\n%s%s", code, out, errOut)
	}
	if ss.Certificates() != 1 || ss.Entries() != 2 {
		t.Errorf("%d certificates, %d log entries; want 1 and 2", ss.Certificates(), ss.Entries())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	startServeProcess(t, bin, addr, dir)
	url := "http://" + addr + "/mcp"
	skilltest.WriteFile(t, filepath.Join(files, "trusted_root.json"), string(ss.TrustedRoot(t)))
	policy := func(name, issuer, subject string) string {
		p := filepath.Join(files, name)
		skilltest.WriteFile(t, p, `{"trustedRoot": "trusted_root.json", "origins": {"acme": {"keyless": [{"issuer": "`+issuer+`", "subject": "`+subject+`"}]}}}`)
		return p
	}
	for _, tc := range []struct {
		name   string
		policy string
		code   int
		want   []string
	}{
		{"the identity", policy("ok.json", op.URL, `.*@acme\\.example`), 0,
			[]string{"2 skills verified, 0 failed", "signature verified: signed by " + identity}},
		{"another subject", policy("subject.json", op.URL, `ci@acme\\.example`), 1,
			[]string{"0 skills verified, 2 failed", "signed by " + identity + ", which the trust policy does not allow"}},
		{"another issuer", policy("issuer.json", "https://token.actions.githubusercontent.com", `.*`), 1,
			[]string{"0 skills verified, 2 failed", "which the trust policy does not allow"}},
	} {
		out, errOut, code := runCLI(t, "verify", "--trust-policy", tc.policy, "--label", "acme", url)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", tc.name, code, tc.code, out, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out+errOut, w) {
				t.Errorf("%s: output lacks %q:\n%s%s", tc.name, w, out, errOut)
			}
		}
	}

	// Without --key, sign finds the environment's token and says that it
	// signs keyless, and as whom.
	t.Setenv(signature.EnvIDToken, sigstoretest.IDToken(t, op, "ci@acme.example"))
	out, errOut, code = runCLI(t, append([]string{"sign", dir}, services...)...)
	if code != 0 || !strings.Contains(out, "signed 2 skills keyless as ci@acme.example") ||
		!strings.Contains(errOut, "signing keyless (no --key given and an ID token found) as ci@acme.example (issuer "+op.URL+"), ID token from $SIGSTORE_ID_TOKEN") {
		t.Errorf("sign with $SIGSTORE_ID_TOKEN: exit %d\n%s%s", code, out, errOut)
	}
}

// TestKeylessSignRefusals: the mode is never guessed against the flags,
// and each failure is one line naming the cause and the fix.
func TestKeylessSignRefusals(t *testing.T) {
	fakeHome(t)
	noAmbientToken(t)
	op := oidctest.Start(t, sigstoretest.Audience)
	ss := sigstoretest.Start(t, op.URL)
	dir := skilltest.WriteTree(t, map[string]string{"pdf/SKILL.md": "---\nname: pdf\ndescription: Read PDFs\n---\nBody.\n"})
	files := t.TempDir()
	token := func(name, tok string) string {
		p := filepath.Join(files, name)
		skilltest.WriteFile(t, p, tok)
		return p
	}
	key, _ := keyFiles(t, files, "acme")
	t.Setenv("SKILLPORT_KEY_PASSWORD", "pw")
	services := []string{"--fulcio-url", ss.FulcioURL, "--rekor-url", ss.RekorURL}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no key, no token", []string{"sign", dir}, 2, "sign: give --key FILE (a PEM private key file; the key itself is never a flag value), or --keyless with an OIDC ID token"},
		{"--keyless without a token", []string{"sign", "--keyless", dir}, 2, "sign: --keyless needs an OIDC ID token: --oidc-token-file FILE, $SIGSTORE_ID_TOKEN, or GitHub Actions"},
		{"a key and --keyless", []string{"sign", "--key", key, "--keyless", dir}, 2, "sign: --key signs with a key; --keyless and oidc-token-file, --fulcio-url"},
		{"a key and a Fulcio", []string{"sign", "--key", key, "--fulcio-url", ss.FulcioURL, dir}, 2, "give one or the other"},
		{"expired token", append([]string{"sign", "--keyless", "--oidc-token-file", token("expired", op.Token(t, "expired")), dir}, services...), 1, "sign: the ID token expired at "},
		{"audience not sigstore", append([]string{"sign", "--keyless", "--oidc-token-file", token("other", op.Token(t, "other")), dir}, services...), 1,
			`sign: keyless: Fulcio at ` + ss.FulcioURL + ` refused the certificate request (HTTP 401: There was an error processing the identity token): the ID token's audience is "https://elsewhere.test/mcp", not "sigstore"; request the token for audience sigstore (ID token from --oidc-token-file `},
		{"no token file", []string{"sign", "--keyless", "--oidc-token-file", filepath.Join(files, "missing"), dir}, 2, "sign: --oidc-token-file: open "},
		{"a token over the limit", []string{"sign", "--keyless", "--oidc-token-file", token("big", strings.Repeat("a", signature.MaxIDTokenBytes+1)), dir}, 2, "over the 65536-byte limit"},
		{"push: Fulcio without --keyless", []string{"push", "--fulcio-url", ss.FulcioURL, dir, "oci://127.0.0.1:1/x:y"}, 2, "push: --fulcio-url applies to keyless signing; add --keyless"},
		{"push: ToolHive", []string{"push", "--keyless", "--format", "toolhive", dir, "oci://127.0.0.1:1/x:y"}, 2, "push: --sign-key and --keyless apply to --format skillport"},
		{"publish over HTTP: Fulcio without --keyless", []string{"publish", "--fulcio-url", ss.FulcioURL, "http://127.0.0.1:1/mcp", dir}, 2, "publish: --fulcio-url applies to keyless signing; add --keyless"},
		{"publish over HTTP: a key and --keyless", []string{"publish", "--sign-key", key, "--keyless", "http://127.0.0.1:1/mcp", dir}, 2, "publish: --sign-key signs with a key; --keyless and"},
	} {
		out, errOut, code := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, want %d and %q:\n%s%s", tc.name, code, tc.code, tc.want, out, errOut)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%s: not one line:\n%s", tc.name, errOut)
		}
	}
	if ss.Entries() != 0 {
		t.Errorf("%d log entries after refusals", ss.Entries())
	}
}

// TestOCIPushKeyless: push --keyless signs each skill at push time and
// attaches the keyless bundles as referrers (a real docker-registry);
// verify of the oci:// source accepts them under a policy naming the
// identity.
func TestOCIPushKeyless(t *testing.T) {
	reg := ocitest.Start(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	fakeHome(t)
	noAmbientToken(t)
	op := oidctest.Start(t, sigstoretest.Audience)
	ss := sigstoretest.Start(t, op.URL)
	dir := skilltest.WriteTree(t, map[string]string{
		"acme/pdf/SKILL.md":  "---\nname: pdf\ndescription: Read PDFs\n---\nBody.\n",
		"acme/docx/SKILL.md": "---\nname: docx\ndescription: Read DOCX\n---\nBody.\n",
	})
	files := t.TempDir()
	tokenFile := filepath.Join(files, "token")
	skilltest.WriteFile(t, tokenFile, sigstoretest.IDToken(t, op, "release@acme.example"))
	skilltest.WriteFile(t, filepath.Join(files, "trusted_root.json"), string(ss.TrustedRoot(t)))
	policy := filepath.Join(files, "policy.json")
	skilltest.WriteFile(t, policy, `{"trustedRoot": "trusted_root.json", "origins": {"*": {"keyless": [{"issuer": "`+op.URL+`", "subject": "release@acme\\.example"}]}}}`)
	src := "oci://" + reg.Host + "/acme/keyless:v1"
	out, errOut, code := runCLI(t, "push", "--keyless", "--oidc-token-file", tokenFile, "--fulcio-url", ss.FulcioURL, "--rekor-url", ss.RekorURL, dir, src)
	if code != 0 || !strings.Contains(out, "2 signatures attached") || !strings.Contains(errOut, "signing keyless (--keyless) as release@acme.example") {
		t.Fatalf("push --keyless: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "verify", "--trust-policy", policy, src)
	if code != 0 || !strings.Contains(out, "2 skills verified, 0 failed") || !strings.Contains(out, "signature verified: signed by release@acme.example (issuer "+op.URL+")") {
		t.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
}
