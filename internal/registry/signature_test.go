package registry_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/sigstoretest"
	"github.com/skillport/skillport/internal/skilltest"
)

// pemKeys writes an unencrypted ECDSA P-256 key pair as PEM files.
func pemKeys(t *testing.T, dir, name string) (priv, pub string) {
	t.Helper()
	privPEM, pubPEM := sigstoretest.Key(t)
	priv, pub = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	if err := os.WriteFile(priv, privPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, pubPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// TestPublishSigned: publish --sign-key signs each skill as the registry
// serves it (under its prefix), the registry stores the bundle with the
// version and serve carries it; a later unsigned version is refused by a
// host that requires a signature, and a committed bundle made for another
// path is not stored.
func TestPublishSigned(t *testing.T) {
	keys := t.TempDir()
	priv, pub := pemKeys(t, keys, "acme")
	_, otherPub := pemKeys(t, keys, "other")
	tree := map[string]string{
		"pdf/SKILL.md":       "---\nname: pdf\ndescription: Read PDFs\n---\nRun scripts/run.sh.\n",
		"pdf/scripts/run.sh": "echo pdf\n",
		"docx/SKILL.md":      "---\nname: docx\ndescription: Read DOCX\n---\nBody.\n",
	}
	dir := skilltest.WriteTree(t, tree)
	dsn := newDB(t)
	skillport(t, 0, "publish", "--registry", dsn, "--prefix", "acme", "--sign-key", priv, dir)
	url := serveReplica(t, dsn)
	out := skillport(t, 0, "verify", "--trusted-key", pub, url)
	if !strings.Contains(out, "signature verified") || !strings.Contains(out, "2 skills verified, 0 failed") {
		t.Errorf("verify of the signed publish:\n%s", out)
	}
	out = skillport(t, 1, "verify", "--trusted-key", otherPub, url)
	if !strings.Contains(out, "skill://acme/pdf/SKILL.md from origin server refused: signature refused: signed by key") {
		t.Errorf("verify with another key:\n%s", out)
	}

	// A new version published without a key is unsigned; the one that did
	// not change keeps its signed version. A bundle signed for the source's
	// own path (no prefix) is not stored for the prefixed path.
	skillport(t, 0, "sign", "--key", priv, dir)
	skilltest.WriteFile(t, filepath.Join(dir, "pdf", "scripts", "run.sh"), "echo pdf 2\n")
	out = skillport(t, 0, "publish", "--registry", dsn, "--prefix", "acme", dir)
	if !strings.Contains(out, "its committed signature is not stored") {
		t.Errorf("publish of a bundle made for another path:\n%s", out)
	}
	url = serveReplica(t, dsn)
	out = skillport(t, 1, "verify", "--trusted-key", pub, url)
	if !strings.Contains(out, "skill://acme/pdf/SKILL.md from origin server refused: unsigned") || !strings.Contains(out, "ok   server:docx") {
		t.Errorf("verify after an unsigned version:\n%s", out)
	}
}
