package registry_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/oidctest"
	"github.com/skillport/skillport/internal/sigstoretest"
	"github.com/skillport/skillport/internal/skilltest"
)

// TestPublishKeyless: publish --keyless signs every skill as the
// registry serves it, with a Fulcio certificate for the ID token's
// identity and a Rekor entry (the test Sigstore), stores the bundles with
// the versions, and a replica serves them to a host whose policy names
// the identity; another subject is refused.
func TestPublishKeyless(t *testing.T) {
	op := oidctest.Start(t, sigstoretest.Audience)
	ss := sigstoretest.Start(t, op.URL)
	files := t.TempDir()
	tokenFile := filepath.Join(files, "token")
	skilltest.WriteFile(t, tokenFile, sigstoretest.IDToken(t, op, "release@acme.example"))
	skilltest.WriteFile(t, filepath.Join(files, "trusted_root.json"), string(ss.TrustedRoot(t)))
	policy := func(name, subject string) string {
		p := filepath.Join(files, name)
		skilltest.WriteFile(t, p, `{"trustedRoot": "trusted_root.json", "origins": {"*": {"keyless": [{"issuer": "`+op.URL+`", "subject": "`+subject+`"}]}}}`)
		return p
	}
	dir := skilltest.WriteTree(t, map[string]string{
		"pdf/SKILL.md":       "---\nname: pdf\ndescription: Read PDFs\n---\nRun scripts/run.sh.\n",
		"pdf/scripts/run.sh": "echo pdf\n",
		"docx/SKILL.md":      "---\nname: docx\ndescription: Read DOCX\n---\nBody.\n",
	})
	dsn := newDB(t)
	out := skillport(t, 0, "publish", "--registry", dsn, "--prefix", "acme", "--keyless", "--oidc-token-file", tokenFile,
		"--fulcio-url", ss.FulcioURL, "--rekor-url", ss.RekorURL, dir)
	if !strings.Contains(out, "signing keyless (--keyless) as release@acme.example (issuer "+op.URL+")") {
		t.Errorf("publish --keyless does not say who signs:\n%s", out)
	}
	if ss.Certificates() != 1 || ss.Entries() != 2 {
		t.Errorf("%d certificates, %d log entries; want 1 and 2", ss.Certificates(), ss.Entries())
	}
	url := serveReplica(t, dsn)
	out = skillport(t, 0, "verify", "--trust-policy", policy("ok.json", `release@acme\\.example`), url)
	if !strings.Contains(out, "2 skills verified, 0 failed") || !strings.Contains(out, "signature verified: signed by release@acme.example (issuer "+op.URL+")") {
		t.Errorf("verify of the keyless publish:\n%s", out)
	}
	out = skillport(t, 1, "verify", "--trust-policy", policy("other.json", `ci@acme\\.example`), url)
	if !strings.Contains(out, "skill://acme/pdf/SKILL.md from origin server refused: signature refused: signed by release@acme.example") {
		t.Errorf("verify with another subject:\n%s", out)
	}
	// Flags of keyless signing without --keyless are refused, not ignored.
	out = skillport(t, 2, "publish", "--registry", dsn, "--oidc-token-file", tokenFile, dir)
	if !strings.Contains(out, "publish: --oidc-token-file applies to keyless signing; add --keyless") {
		t.Errorf("publish --oidc-token-file without --keyless:\n%s", out)
	}
}
