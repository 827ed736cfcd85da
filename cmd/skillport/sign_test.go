package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/sigfile"
)

// writeTree writes files (slash paths) under a new temporary folder.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, s := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// keyFiles writes an ECDSA P-256 key pair: the private key in cosign's
// encrypted format (passphrase in $SKILLPORT_KEY_PASSWORD), the public
// key as PEM.
func keyFiles(t testing.TB, dir, name string) (priv, pub string) {
	t.Helper()
	sk, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := cryptoutils.MarshalPrivateKeyToEncryptedDER(sk, cryptoutils.StaticPasswordFunc([]byte("pw")))
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := cryptoutils.MarshalPublicKeyToPEM(sk.Public())
	if err != nil {
		t.Fatal(err)
	}
	priv, pub = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	if err := os.WriteFile(priv, cryptoutils.PEMEncode(cryptoutils.EncryptedSigstorePrivateKeyPEMType, der), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, pubPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// verifyWith runs verify against dir served in-process, trusting pubs.
func verifyWith(t *testing.T, dir string, pubs ...string) (string, error) {
	t.Helper()
	return verifyOrigin(t, dirOrigin(t, dir, "docs"), pubs...)
}

// verifyOrigin runs verify against origin, trusting pubs.
func verifyOrigin(t *testing.T, origin host.Origin, pubs ...string) (string, error) {
	t.Helper()
	f := flags()
	f.trust.keys = pubs
	if err := f.trust.load("verify"); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := runVerify(context.Background(), &out, &errOut, f, []host.Origin{origin}, false)
	return out.String() + errOut.String(), err
}

func TestSignServeVerify(t *testing.T) {
	keys := t.TempDir()
	priv, pub := keyFiles(t, keys, "cosign")
	_, otherPub := keyFiles(t, keys, "other")
	dir := writeTree(t, map[string]string{
		"acme/pdf/SKILL.md":       "---\nname: pdf\ndescription: Read PDFs\n---\nRun scripts/run.sh.\n",
		"acme/pdf/scripts/run.sh": "echo pdf\n",
		"acme/docx/SKILL.md":      "---\nname: docx\ndescription: Read DOCX\n---\nBody.\n",
	})

	var out bytes.Buffer
	if err := runSign(&out, priv, dir); err == nil || !strings.Contains(err.Error(), "SKILLPORT_KEY_PASSWORD") {
		t.Fatalf("encrypted key without a passphrase: %v", err)
	}
	t.Setenv("SKILLPORT_KEY_PASSWORD", "pw")
	if err := runSign(&out, priv, dir); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "signed 2 skills") {
		t.Fatalf("sign said %q", out.String())
	}
	for _, d := range []string{"acme/pdf", "acme/docx"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(sigfile.Path(d)))); err != nil {
			t.Fatal(err)
		}
	}
	// The bundles are beside the skills, never served as skill files.
	cat, err := catalog.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sk := range cat.Skills() {
		if len(sk.Signature) == 0 {
			t.Errorf("%s: no signature attached", sk.URI)
		}
		for _, f := range sk.Files {
			if strings.Contains(f.URI, ".skillport") {
				t.Errorf("bundle published as a skill file: %s", f.URI)
			}
		}
	}
	cat.Close()

	steps := []struct {
		name  string
		edit  func()
		pubs  []string
		ok    bool
		wants []string
	}{
		{"right key", nil, []string{pub}, true, []string{"signature verified", "2 skills verified, 0 failed"}},
		{"no policy reports the signer", nil, nil, true, []string{"signed by key", "not checked"}},
		{"another key", nil, []string{otherPub}, false, []string{"not a trusted key", "0 skills verified, 2 failed"}},
		{"one byte changed at the source", func() {
			p := filepath.Join(dir, "acme/pdf/scripts/run.sh")
			if err := os.WriteFile(p, []byte("echo pdX\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{pub}, false, []string{"pdf/SKILL.md from origin docs refused", "scripts/run.sh changed after signing", "1 skill verified, 1 failed"}},
		{"changed file without a policy", nil, nil, false, []string{"signature invalid", "changed after signing"}},
		{"signature moved to another skill", func() {
			if err := runSign(&bytes.Buffer{}, priv, dir); err != nil { // re-sign after the change
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(sigfile.Path("acme/pdf"))))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(sigfile.Path("acme/docx"))), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{pub}, false, []string{"docx/SKILL.md from origin docs refused", "moved to another skill", "1 skill verified, 1 failed"}},
		{"signatures stripped", func() {
			if err := os.RemoveAll(filepath.Join(dir, ".skillport")); err != nil {
				t.Fatal(err)
			}
		}, []string{pub}, false, []string{"unsigned", "the trust policy requires one", "0 skills verified, 2 failed"}},
		{"unsigned without a policy", nil, nil, true, []string{"2 skills verified, 0 failed"}},
	}
	for _, st := range steps {
		if st.edit != nil {
			st.edit()
		}
		got, err := verifyWith(t, dir, st.pubs...)
		if (err == nil) != st.ok {
			t.Errorf("%s: err %v, want ok=%v\n%s", st.name, err, st.ok, got)
		}
		for _, w := range st.wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s: output lacks %q:\n%s", st.name, w, got)
			}
		}
	}
}

func TestSignUsage(t *testing.T) {
	dir := t.TempDir()
	if err := runSign(&bytes.Buffer{}, filepath.Join(dir, "missing.key"), dir); exitCode(err) != 2 {
		t.Errorf("missing key file: %v", err)
	}
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte("not a key"), 0o600)
	if err := runSign(&bytes.Buffer{}, bad, dir); exitCode(err) != 2 || !strings.Contains(err.Error(), "bad.key") {
		t.Errorf("bad key file: %v", err)
	}
	f := flags()
	f.trust.keys = []string{bad}
	if err := f.trust.load("verify"); exitCode(err) != 2 || !strings.Contains(err.Error(), "--trusted-key") {
		t.Errorf("bad trusted key: %v", err)
	}
}

// TestPullTrustedKey: pull writes a skill signed by a trusted key, and
// writes nothing of one signed by another key or unsigned.
func TestPullTrustedKey(t *testing.T) {
	keys := t.TempDir()
	priv, pub := keyFiles(t, keys, "cosign")
	_, otherPub := keyFiles(t, keys, "other")
	t.Setenv("SKILLPORT_KEY_PASSWORD", "pw")
	dir := writeTree(t, map[string]string{
		"acme/pdf/SKILL.md": "---\nname: pdf\ndescription: Read PDFs\n---\nBody.\n",
	})
	if err := runSign(&bytes.Buffer{}, priv, dir); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pub    string
		unsign bool
		want   string
	}{
		{otherPub, false, "not a trusted key"},
		{pub, false, ""},
		{pub, true, "the trust policy requires one"},
	} {
		if tc.unsign {
			os.RemoveAll(filepath.Join(dir, ".skillport"))
		}
		to := t.TempDir()
		f := flags()
		f.trust.keys = []string{tc.pub}
		if err := f.trust.load("pull"); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		err := runPull(context.Background(), &out, &errOut, f, []host.Origin{dirOrigin(t, dir, "docs")}, to, false, false)
		_, statErr := os.Stat(filepath.Join(to, "pdf", "SKILL.md"))
		if tc.want == "" {
			if err != nil || statErr != nil {
				t.Errorf("trusted key: %v %v\n%s%s", err, statErr, out.String(), errOut.String())
			}
			continue
		}
		if err == nil || statErr == nil || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("want refusal %q: err %v, written %v\n%s%s", tc.want, err, statErr == nil, out.String(), errOut.String())
		}
	}
}

// TestSignCLI runs sign, verify and pull as the command line does.
func TestSignCLI(t *testing.T) {
	keys := t.TempDir()
	priv, _ := keyFiles(t, keys, "cosign")
	dir := writeTree(t, map[string]string{"a/SKILL.md": "---\nname: a\ndescription: d\n---\nbody\n"})
	t.Setenv("SKILLPORT_KEY_PASSWORD", "pw")
	noAmbientToken(t) // else sign without --key signs keyless
	if _, errOut, code := runCLI(t, "sign", dir); code != 2 || !strings.Contains(errOut, "give --key FILE") {
		t.Errorf("sign without --key: exit %d: %s", code, errOut)
	}
	if out, errOut, code := runCLI(t, "sign", "--key", priv, dir); code != 0 || !strings.Contains(out, "signed 1 skill") {
		t.Errorf("sign: exit %d: %s%s", code, out, errOut)
	}
	missing := filepath.Join(keys, "missing.pub")
	for _, cmd := range [][]string{
		{"verify", "--trusted-key", missing, "http://127.0.0.1:9"},
		{"pull", "--to", t.TempDir(), "--trusted-key", missing, "http://127.0.0.1:9"},
	} {
		if _, errOut, code := runCLI(t, cmd...); code != 2 || !strings.Contains(errOut, "--trusted-key") || !strings.Contains(errOut, "missing.pub") {
			t.Errorf("%s with a missing key: exit %d: %s", cmd[0], code, errOut)
		}
	}
}
