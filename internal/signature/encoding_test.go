package signature

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// canonicalSet is the canonical encoding as docs/signing.md defines it:
// encoding/json's output for this struct (keys in byte order).
type canonicalSet struct {
	Frontmatter json.RawMessage     `json:"frontmatter"`
	Resources   []canonicalResource `json:"resources"`
	URI         string              `json:"uri"`
}

// referenceStatement is Statement with the canonical resources.
type referenceStatement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     struct {
		Frontmatter json.RawMessage     `json:"frontmatter"`
		Resources   []canonicalResource `json:"resources"`
	} `json:"predicate"`
}

// referenceEncoding encodes s with encoding/json, struct by struct, as
// the format is defined; Set.encode writes the same bytes part by part.
func referenceEncoding(t testing.TB, s *Set) (canonical, statement []byte) {
	fm, err := canonicalJSON(s.Frontmatter)
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(s.Resources)
	slices.SortFunc(sorted, func(a, b Resource) int { return strings.Compare(a.URI, b.URI) })
	rs := []canonicalResource{}
	for _, r := range sorted {
		rs = append(rs, canonicalResource{Digest: r.Digest, Size: r.Size, URI: r.URI})
	}
	c, err := encode(canonicalSet{Frontmatter: fm, Resources: rs, URI: s.URI})
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256(c)
	rst := referenceStatement{
		Type:          statementType,
		Subject:       []Subject{{Name: s.URI, Digest: map[string]string{"sha256": hex.EncodeToString(d[:])}}},
		PredicateType: PredicateType,
	}
	rst.Predicate.Frontmatter, rst.Predicate.Resources = fm, rs
	st, err := encode(rst)
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}

func checkEncoding(t testing.TB, s *Set) {
	wantC, wantSt := referenceEncoding(t, s)
	c, err := s.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Statement()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c, wantC) {
		t.Fatalf("canonical encoding of %q:\n got %s\nwant %s", s.URI, c, wantC)
	}
	if !bytes.Equal(st, wantSt) {
		t.Fatalf("statement of %q:\n got %s\nwant %s", s.URI, st, wantSt)
	}
	// What the verifier compares a payload with, and what it decodes when
	// the bytes are not its own.
	e, err := s.encode()
	if err != nil {
		t.Fatal(err)
	}
	if !e.isStatement(wantSt) {
		t.Fatalf("isStatement refused the statement of %q", s.URI)
	}
	for _, other := range [][]byte{wantSt[:len(wantSt)-1], append(bytes.Clone(wantSt), ' '), append([]byte{' '}, wantSt...)} {
		if e.isStatement(other) {
			t.Fatalf("isStatement took %q for the statement of %q", other, s.URI)
		}
	}
	if _, err := parseStatement(st); err != nil {
		t.Fatal(err)
	}
}

// TestCanonicalForm pins the canonical encoding docs/signing.md defines:
// every object's keys in byte order, the resources' too (the encoding
// signed before this test wrote a resource's keys in the wire's order,
// uri first, against the documented form).
func TestCanonicalForm(t *testing.T) {
	c, err := sampleSet("skill://acme/pdf/SKILL.md").Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"frontmatter":{"description":"Read PDFs <fast> & well","metadata":{"a":[1.50,"x"],"b":1},"name":"pdf"},` +
		`"resources":[{"digest":"sha256:` + strings.Repeat("a", 64) + `","size":120,"uri":"skill://acme/pdf/SKILL.md"},` +
		`{"digest":"sha256:` + strings.Repeat("b", 64) + `","size":7,"uri":"skill://acme/pdf/scripts/run.sh"}],` +
		`"uri":"skill://acme/pdf/SKILL.md"}`
	if string(c) != want {
		t.Fatalf("canonical encoding:\n got %s\nwant %s", c, want)
	}
}

// TestCanonicalEncoding: the canonical set and the statement, written
// part by part, are byte for byte encoding/json's encoding of the
// structs that define them, for strings that need escaping too.
func TestCanonicalEncoding(t *testing.T) {
	tricky := []*Set{
		sampleSet("skill://acme/pdf/SKILL.md"),
		{URI: "skill://a/SKILL.md"},
		{URI: "skill://a/<b>&\"q\"\u2028\u2029\x01\xff/SKILL.md", Frontmatter: json.RawMessage(`{"n":"<é>","z":null,"a":[1e3, -0.0]}`),
			Resources: []Resource{{URI: "skill://a/\t\\", Digest: "sha256:\x7f", Size: -1}, {URI: "skill://a/b", Size: 1 << 62}}},
	}
	for _, s := range tricky {
		checkEncoding(t, s)
	}
}

func FuzzCanonicalEncoding(f *testing.F) {
	f.Add("skill://acme/pdf/SKILL.md", `{"name":"pdf","description":"d"}`, "skill://acme/pdf/a", "sha256:aa", int64(3))
	f.Add("skill://a/<&>\u2028/SKILL.md", `{"b":[1.50,"\u003c"],"a":{}}`, "\xff", "", int64(-1))
	f.Fuzz(func(t *testing.T, uri, fm, res, digest string, size int64) {
		s := &Set{URI: uri, Frontmatter: json.RawMessage(fm), Resources: []Resource{{URI: res, Digest: digest, Size: size}, {URI: uri, Digest: digest}}}
		if uri == "" || res == uri {
			return
		}
		if _, err := canonicalJSON(s.Frontmatter); err != nil {
			if _, err := s.Canonical(); err == nil {
				t.Fatal("a frontmatter that is not JSON encoded")
			}
			return
		}
		checkEncoding(t, s)
	})
}
