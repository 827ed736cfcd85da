package signature

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// newKeys returns a PEM private key and its PEM public key.
func newKeys(t testing.TB, ed bool) (priv, pub []byte) {
	t.Helper()
	var k any
	var p any
	if ed {
		pk, sk, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k, p = sk, pk
	} else {
		sk, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k, p = sk, sk.Public()
	}
	priv, err := cryptoutils.MarshalPrivateKeyToPEM(k)
	if err != nil {
		t.Fatal(err)
	}
	pub, err = cryptoutils.MarshalPublicKeyToPEM(p)
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

func sampleSet(uri string) *Set {
	root := strings.TrimSuffix(uri, "/SKILL.md")
	return &Set{
		URI:         uri,
		Frontmatter: json.RawMessage(`{"name":"pdf","description":"Read PDFs <fast> & well","metadata":{"b":1,"a":[1.50,"x"]}}`),
		Resources: []Resource{
			{URI: uri, Digest: "sha256:" + strings.Repeat("a", 64), Size: 120},
			{URI: root + "/scripts/run.sh", Digest: "sha256:" + strings.Repeat("b", 64), Size: 7},
		},
	}
}

func TestSignVerifyTampering(t *testing.T) {
	for _, ed := range []bool{false, true} {
		priv, pub := newKeys(t, ed)
		_, otherPub := newKeys(t, ed)
		s, err := LoadSigner(priv, nil)
		if err != nil {
			t.Fatal(err)
		}
		set := sampleSet("skill://acme/pdf/SKILL.md")
		b, err := s.Sign(set)
		if err != nil {
			t.Fatal(err)
		}
		v, err := LoadVerifier(pub)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(set, b); err != nil {
			t.Fatalf("ed25519=%v: the right key: %v", ed, err)
		}
		// Resource order and frontmatter white space are not part of the set.
		reordered := sampleSet("skill://acme/pdf/SKILL.md")
		reordered.Resources[0], reordered.Resources[1] = reordered.Resources[1], reordered.Resources[0]
		reordered.Frontmatter = json.RawMessage(`{ "metadata":{"a":[1.50,"x"],"b":1}, "description":"Read PDFs <fast> & well", "name":"pdf" }`)
		if _, err := v.Verify(reordered, b); err != nil {
			t.Fatalf("reordered set: %v", err)
		}
		ov, _ := LoadVerifier(otherPub)
		if _, err := ov.Verify(set, b); err == nil || !strings.Contains(err.Error(), "not a trusted key") {
			t.Fatalf("another key: %v", err)
		}
		tamper := []struct {
			name, want string
			edit       func(*Set)
		}{
			{"other skill", "moved to another skill", func(s *Set) { s.URI = "skill://acme/docx/SKILL.md" }},
			{"one digest byte", "changed after signing", func(s *Set) { s.Resources[1].Digest = "sha256:" + strings.Repeat("b", 63) + "c" }},
			{"size", "changed after signing", func(s *Set) { s.Resources[1].Size++ }},
			{"added file", "added after signing", func(s *Set) {
				s.Resources = append(s.Resources, Resource{URI: "skill://acme/pdf/extra.md", Digest: "sha256:" + strings.Repeat("c", 64), Size: 1})
			}},
			{"removed file", "removed after signing", func(s *Set) { s.Resources = s.Resources[:1] }},
			{"frontmatter", "frontmatter changed", func(s *Set) { s.Frontmatter = json.RawMessage(`{"name":"pdf","description":"Read PDFs"}`) }},
			{"number literal", "frontmatter changed", func(s *Set) {
				s.Frontmatter = json.RawMessage(`{"name":"pdf","description":"Read PDFs <fast> & well","metadata":{"b":1,"a":[1.5,"x"]}}`)
			}},
		}
		for _, tc := range tamper {
			t.Run(tc.name, func(t *testing.T) {
				other := sampleSet("skill://acme/pdf/SKILL.md")
				tc.edit(other)
				_, err := v.Verify(other, b)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want an error saying %q", err, tc.want)
				}
				if _, err := Inspect(other, b); err == nil {
					t.Fatal("Inspect matched a tampered set")
				}
			})
		}
	}
}

// TestForgedStatement: a statement rewritten to match a changed set, with
// the old signature, is a bad signature.
func TestForgedStatement(t *testing.T) {
	priv, pub := newKeys(t, false)
	s, _ := LoadSigner(priv, nil)
	set := sampleSet("skill://acme/pdf/SKILL.md")
	b, err := s.Sign(set)
	if err != nil {
		t.Fatal(err)
	}
	changed := sampleSet("skill://acme/pdf/SKILL.md")
	changed.Resources[1].Size = 8
	st, _ := changed.Statement()
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["dsseEnvelope"].(map[string]any)["payload"] = st // []byte marshals as base64
	forged, _ := json.Marshal(m)
	v, _ := LoadVerifier(pub)
	if _, err := v.Verify(changed, forged); err == nil || !strings.Contains(err.Error(), "bad signature") {
		t.Fatalf("forged statement: %v", err)
	}
}

func TestEncryptedKey(t *testing.T) {
	sk, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := cryptoutils.MarshalPrivateKeyToEncryptedDER(sk, cryptoutils.StaticPasswordFunc([]byte("hunter2")))
	if err != nil {
		t.Fatal(err)
	}
	p := cryptoutils.PEMEncode(cryptoutils.EncryptedSigstorePrivateKeyPEMType, der)
	if _, err := LoadSigner(p, nil); err == nil || !strings.Contains(err.Error(), "SKILLPORT_KEY_PASSWORD") {
		t.Fatalf("no passphrase: %v", err)
	}
	if _, err := LoadSigner(p, []byte("wrong")); err == nil {
		t.Fatal("a wrong passphrase opened the key")
	}
	if _, err := LoadSigner(p, []byte("hunter2")); err != nil {
		t.Fatal(err)
	}
}

func TestBadKeysAndBundles(t *testing.T) {
	rsaPEM := []byte("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n")
	if _, err := LoadVerifier(rsaPEM); err == nil {
		t.Fatal("garbage public key loaded")
	}
	if _, err := LoadSigner([]byte("hello"), nil); err == nil {
		t.Fatal("garbage private key loaded")
	}
	sk384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384, _ := cryptoutils.MarshalPrivateKeyToPEM(sk384)
	if _, err := LoadSigner(p384, nil); err == nil || !strings.Contains(err.Error(), "P-256") {
		t.Fatalf("P-384: %v", err)
	}
	set := sampleSet("skill://a/SKILL.md")
	for _, raw := range []string{"", "{}", "[]", `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`, strings.Repeat(" ", MaxBundleBytes+1)} {
		if _, err := Inspect(set, []byte(raw)); err == nil {
			t.Errorf("bundle %.40q accepted", raw)
		}
	}
}

func FuzzParseBundle(f *testing.F) {
	priv, _ := newKeys(f, false)
	s, _ := LoadSigner(priv, nil)
	b, _ := s.Sign(sampleSet("skill://acme/pdf/SKILL.md"))
	f.Add(b)
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"AA=="}]}}`))
	st, _ := sampleSet("skill://x/SKILL.md").Statement()
	f.Add(st)
	var in Inspector
	f.Fuzz(func(t *testing.T, raw []byte) {
		set := sampleSet("skill://acme/pdf/SKILL.md")
		id, err := Inspect(set, raw)
		// An Inspector answers as Inspect does, the first time and from
		// its memory of the bundle.
		for range 2 {
			id2, err2 := in.Inspect(set, raw)
			if id2 != id || (err2 == nil) != (err == nil) || (err != nil && err2.Error() != err.Error()) {
				t.Fatalf("Inspector: %v, %v; Inspect: %v, %v", id2, err2, id, err)
			}
		}
		// parseBundle decodes the statement open leaves as bytes: it
		// accepts a bundle exactly when open does and its payload parses.
		_, st, perr := parseBundle(raw)
		_, payload, _, oerr := open(raw)
		if b, _, _ := decodeBundle(raw); b != nil && oerr == nil {
			if _, serr := parseStatement(payload); (serr == nil) != (perr == nil) || (perr == nil && st == nil) {
				t.Fatalf("parseBundle: %v; the payload parses: %v", perr, serr)
			}
		}
		_, _ = parseStatement(raw)
	})
}

// TestInspectorRemembers: an Inspector answers for a bundle it decoded
// before as Inspect does, for the same and for a changed set, and each
// bundle for its own signer.
func TestInspectorRemembers(t *testing.T) {
	priv, _ := newKeys(t, false)
	otherPriv, _ := newKeys(t, true)
	s, _ := LoadSigner(priv, nil)
	o, _ := LoadSigner(otherPriv, nil)
	set := sampleSet("skill://acme/pdf/SKILL.md")
	raw, _ := s.Sign(set)
	other, _ := o.Sign(set)
	var in Inspector
	for range 2 {
		for _, c := range []struct {
			raw []byte
			key string
		}{{raw, s.KeyID()}, {other, o.KeyID()}} {
			id, err := in.Inspect(set, c.raw)
			if err != nil || id.KeyID != c.key {
				t.Fatalf("Inspect: %v, %v; want key %s", id, err, c.key)
			}
			changed := sampleSet("skill://acme/pdf/SKILL.md")
			changed.Resources[1].Size++
			if _, err := in.Inspect(changed, c.raw); err == nil || !strings.Contains(err.Error(), "changed after signing") {
				t.Fatalf("a changed set: %v", err)
			}
		}
	}
	if _, err := in.Inspect(set, []byte("{}")); err == nil {
		t.Fatal("Inspector accepted a bundle that is not one")
	}
}
