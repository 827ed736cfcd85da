package regapi_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/regapi"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/internal/sigfile"
	"github.com/skillport/skillport/internal/signature"
	"github.com/skillport/skillport/internal/sigstoretest"
	"github.com/skillport/skillport/internal/skilltest"
)

func testSigner(t *testing.T) *signature.Signer {
	s, _ := testKey(t)
	return s
}

// testKey is a signer and its public key, PEM.
func testKey(t *testing.T) (*signature.Signer, []byte) {
	t.Helper()
	priv, pub := sigstoretest.Key(t)
	s, err := signature.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, pub
}

// signedTree is a tree of the skills notes and todo (body in each), as
// the registry serves it under ns, each skill signed by s (nil: unsigned).
func signedTree(t *testing.T, ns, body string, s *signature.Signer) *catalog.Catalog {
	t.Helper()
	dir := skilltest.WriteTree(t, map[string]string{
		"notes/SKILL.md": "---\nname: notes\ndescription: Notes for the signature tests.\n---\n" + body + "\n",
		"todo/SKILL.md":  "---\nname: todo\ndescription: A to-do list for the signature tests.\n---\n" + body + "\n",
	})
	c, err := catalog.OpenDir(dir, &catalog.Options{Prefix: ns, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, sk := range c.Skills() {
		if s == nil {
			continue
		}
		if sk.Signature, err = s.Sign(registry.SignedSet(sk)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func skillOf(c *catalog.Catalog, name string) *catalog.Skill {
	for _, sk := range c.Skills() {
		if sk.Name == name {
			return sk
		}
	}
	return nil
}

// TestPublishSignatures: the bundles of a publish over HTTP are stored
// with the new versions when each binds to its skill as published; a
// bundle of another skill, of changed content, of another namespace, over
// sigfile.MaxBytes, not JSON or of no skill of the archive refuses the
// whole publish with one line naming the skill (or file) and the reason,
// writes nothing, and is recorded. An unsigned publish still works.
func TestPublishSignatures(t *testing.T) {
	ctx := context.Background()
	f := start(t, regapi.Options{})
	alice := f.as(t, "alice") // group ops: publish acme/ops
	s := testSigner(t)
	const ns = "acme/ops"

	refusals := []struct {
		name string
		cat  func() *catalog.Catalog
		want string
	}{
		{"a bundle moved to another skill", func() *catalog.Catalog {
			c := signedTree(t, ns, "one", s)
			n, d := skillOf(c, "notes"), skillOf(c, "todo")
			n.Signature, d.Signature = d.Signature, n.Signature
			return c
		}, "skill://acme/ops/notes/SKILL.md: signature refused: its bundle .skillport/signatures/notes.sigstore.json does not bind to the skill published: signature does not match: it was made for skill://acme/ops/todo/SKILL.md, not skill://acme/ops/notes/SKILL.md"},
		{"changed content", func() *catalog.Catalog {
			old := signedTree(t, ns, "one", s)
			c := signedTree(t, ns, "two", nil)
			skillOf(c, "todo").Signature = skillOf(old, "todo").Signature
			return c
		}, "skill://acme/ops/todo/SKILL.md: signature refused: its bundle .skillport/signatures/todo.sigstore.json does not bind to the skill published: signature does not match: file skill://acme/ops/todo/SKILL.md changed after signing"},
		{"signed for another namespace", func() *catalog.Catalog {
			return signedTree(t, "acme/elsewhere", "one", s)
		}, "it was made for skill://acme/elsewhere/notes/SKILL.md, not skill://acme/ops/notes/SKILL.md"},
		{"a bundle over the limit", func() *catalog.Catalog {
			c := signedTree(t, ns, "one", s)
			skillOf(c, "notes").Signature = []byte(`{"pad":"` + strings.Repeat("a", sigfile.MaxBytes) + `"}`)
			return c
		}, "skill://acme/ops/notes/SKILL.md: signature refused: its bundle .skillport/signatures/notes.sigstore.json is 65546 bytes, over the 65536-byte limit of a signature bundle"},
		{"not JSON", func() *catalog.Catalog {
			c := signedTree(t, ns, "one", s)
			skillOf(c, "notes").Signature = []byte("not a bundle")
			return c
		}, "skill://acme/ops/notes/SKILL.md: signature refused: signature bundle not attached: .skillport/signatures/notes.sigstore.json is not JSON"},
		{"JSON, not a bundle", func() *catalog.Catalog {
			c := signedTree(t, ns, "one", s)
			skillOf(c, "notes").Signature = []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`)
			return c
		}, "skill://acme/ops/notes/SKILL.md: signature refused: its bundle .skillport/signatures/notes.sigstore.json does not bind to the skill published: "},
	}
	for _, tc := range refusals {
		_, err := alice.Publish(ctx, tc.cat(), ns, "", false)
		if status(err) != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (HTTP %d), want 422 with %q", tc.name, err, status(err), tc.want)
		}
	}
	// A bundle of no skill of the archive, sent by hand.
	md := "---\nname: notes\ndescription: Notes for the signature tests.\n---\none\n"
	ghost := string(must(t)(s.Sign(registry.SignedSet(skillOf(signedTree(t, ns, "one", nil), "todo")))))
	body := tgz(t,
		&tar.Header{Name: "notes/SKILL.md", Typeflag: tar.TypeReg, Size: int64(len(md)), Mode: 0o644, Linkname: md},
		&tar.Header{Name: ".skillport/signatures/todo.sigstore.json", Typeflag: tar.TypeReg, Size: int64(len(ghost)), Mode: 0o644, Linkname: ghost})
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(f.server, "/mcp")+regapi.Prefix+"publish?namespace="+ns, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.op.Token(t, "alice"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := ".skillport/signatures/todo.sigstore.json: signature refused: it is the bundle of no skill of the archive"; resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(b), want) {
		t.Errorf("a bundle of no skill: %d %s, want 422 with %q", resp.StatusCode, b, want)
	}
	if n := f.count(t, "SELECT count(*) FROM versions"); n != 0 {
		t.Fatalf("refused publishes wrote %d versions", n)
	}
	if n, want := f.count(t, "SELECT count(*) FROM events WHERE outcome = 'refused' AND action = 'publish' AND detail LIKE '%signature refused%'"), len(refusals)+1; n != want {
		t.Errorf("%d refused publishes recorded, want %d", n, want)
	}

	// Signed: each bundle is stored with its version, byte for byte.
	c := signedTree(t, ns, "one", s)
	if _, err := alice.Publish(ctx, c, ns, "", false); err != nil {
		t.Fatalf("a signed publish: %v", err)
	}
	for _, sk := range c.Skills() {
		var stored string
		if err := f.conn.QueryRow(ctx, "SELECT signature FROM versions WHERE path = $1 AND version = 1", sk.Path).Scan(&stored); err != nil || stored != string(sk.Signature) {
			t.Errorf("%s: stored signature %.60q, %v; want the bundle sent", sk.Path, stored, err)
		}
	}
	// Unsigned, where no policy requires signatures: published, unsigned.
	if _, err := alice.Publish(ctx, signedTree(t, ns, "two", nil), ns, "", false); err != nil {
		t.Fatalf("an unsigned publish: %v", err)
	}
	if n := f.count(t, "SELECT count(*) FROM versions WHERE version = 2 AND signature IS NULL"); n != 2 {
		t.Errorf("%d unsigned versions 2, want 2", n)
	}
}

func must(t *testing.T) func([]byte, error) []byte {
	return func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// TestPublishRequireSigned: a replica with RequireSigned (serve
// --require-signed-publish) refuses an unsigned skill, a skill signed by
// a key its policy does not name for the namespace, and a namespace its
// policy names no signer for; a skill signed by the key is published.
func TestPublishRequireSigned(t *testing.T) {
	ctx := context.Background()
	s, pub := testKey(t)
	other := testSigner(t)
	p, err := signature.ParsePolicy([]byte(`{"origins": {"acme": {"keys": ["acme.pub"]}}}`), func(string) ([]byte, error) { return pub, nil })
	if err != nil {
		t.Fatal(err)
	}
	f := start(t, regapi.Options{RequireSigned: p})
	alice := f.as(t, "alice")                 // publish acme/ops
	admin := f.as(t, "alice", "skills:admin") // scope: admin everywhere
	for _, tc := range []struct {
		name   string
		client *regapi.Client
		ns     string
		signer *signature.Signer
		want   string
	}{
		{"unsigned", alice, "acme/ops", nil, `skill://acme/ops/notes/SKILL.md: signature refused: unsigned, and this replica requires signed publishes in namespace "acme/ops"; publish with --sign-key FILE or --keyless`},
		{"another key", alice, "acme/ops", other, "skill://acme/ops/notes/SKILL.md: signature refused: signed by key "},
		{"a namespace the policy does not name", admin, "beta", s, `namespace "beta": signature refused: this replica requires signed publishes, and its policy (--require-signed-publish) names no signer for "beta" nor "*"`},
	} {
		_, err := tc.client.Publish(ctx, signedTree(t, tc.ns, "one", tc.signer), tc.ns, "", false)
		if status(err) != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (HTTP %d), want 422 with %q", tc.name, err, status(err), tc.want)
		}
	}
	if n := f.count(t, "SELECT count(*) FROM versions"); n != 0 {
		t.Fatalf("refused publishes wrote %d versions", n)
	}
	if _, err := alice.Publish(ctx, signedTree(t, "acme/ops", "one", s), "acme/ops", "", false); err != nil {
		t.Fatalf("a publish signed by the policy's key: %v", err)
	}
	if n := f.count(t, "SELECT count(*) FROM versions WHERE signature IS NOT NULL"); n != 2 {
		t.Errorf("%d signed versions stored, want 2", n)
	}
}
