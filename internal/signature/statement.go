// Package signature signs and verifies a skill's complete resource set
// with Sigstore bundles (key-based). What is signed, and how it is
// encoded, is described in docs/signing.md.
package signature

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skillport/skillport/internal/sigfile"
)

// MetaKey is the _meta key under which a server carries a skill's bundle
// in its skills/list and skills/get entries.
const MetaKey = "io.skillport/signature"

// PredicateType names what the in-toto statement asserts: the subject's
// digest is that of the canonical resource set below.
const PredicateType = "https://skillport.dev/attestations/skill-resources/v1"

// PayloadType is the DSSE payload type of an in-toto statement.
const PayloadType = "application/vnd.in-toto+json"

// statementType is the in-toto v1 Statement type.
const statementType = "https://in-toto.io/Statement/v1"

// MaxBundleBytes bounds a bundle read from a source folder or a server's entry.
const MaxBundleBytes = sigfile.MaxBytes

// Resource is one file of a skill as its entry lists it.
type Resource struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Set is a skill's complete resource set: what a signature covers.
type Set struct {
	// URI is the skill's SKILL.md URI; it binds the signature to the skill path.
	URI string
	// Frontmatter is the SKILL.md frontmatter as JSON.
	Frontmatter json.RawMessage
	// Resources is every file of the skill, in any order.
	Resources []Resource
}

// Canonical returns the set's canonical JSON: object keys sorted by
// byte, no insignificant white space, no HTML escaping, numbers as
// written, resources sorted by URI. Two sets are equal exactly when their
// canonical encodings are.
func (s *Set) Canonical() ([]byte, error) {
	e, err := s.encode()
	if err != nil {
		return nil, err
	}
	return e.canonical, nil
}

// canonicalResource is a Resource with its keys in byte order, as the
// canonical encoding requires of every object (Resource itself keeps the
// wire's order: uri, digest, size).
type canonicalResource struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	URI    string `json:"uri"`
}

// encoded is a set's canonical encoding and the parts of it its
// statement repeats, subslices of canonical: the verifier rebuilds the
// statement it expects from them instead of decoding the one it got.
type encoded struct {
	canonical, frontmatter, resources, uri []byte
	digest                                 [sha256.Size]byte
}

// encode is Canonical, keeping the parts. It writes what encoding/json
// writes for canonicalSet (TestCanonicalEncoding holds it to that), part
// by part, so that the parts need not be found again.
func (s *Set) encode() (*encoded, error) {
	if s.URI == "" {
		return nil, errors.New("signature: the skill URI is empty")
	}
	rs := slices.Clone(s.Resources)
	slices.SortFunc(rs, func(a, b Resource) int { return strings.Compare(a.URI, b.URI) })
	size := len(`{"frontmatter":,"resources":[],"uri":}`) + len(s.Frontmatter) + 2*len(s.URI)
	for i := range rs {
		if i > 0 && rs[i].URI == rs[i-1].URI {
			return nil, fmt.Errorf("signature: %s: resource %s is listed twice", s.URI, rs[i].URI)
		}
		size += len(`{"digest":"","size":,"uri":""},`) + 20 + len(rs[i].Digest) + 2*len(rs[i].URI)
	}
	crs := make([]canonicalResource, len(rs))
	for i, r := range rs {
		crs[i] = canonicalResource{Digest: r.Digest, Size: r.Size, URI: r.URI}
	}
	// One buffer and one encoder for the whole set.
	w := newJSONWriter(size)
	w.b.WriteString(`{"frontmatter":`)
	f0 := w.b.Len()
	if err := w.canonical(s.Frontmatter); err != nil {
		return nil, fmt.Errorf("signature: %s: frontmatter: %w", s.URI, err)
	}
	f1 := w.b.Len()
	w.b.WriteString(`,"resources":`)
	r0 := w.b.Len()
	if err := w.value(crs); err != nil {
		return nil, err
	}
	r1 := w.b.Len()
	w.b.WriteString(`,"uri":`)
	u0 := w.b.Len()
	if err := w.value(s.URI); err != nil {
		return nil, err
	}
	u1 := w.b.Len()
	w.b.WriteByte('}')
	c := w.b.Bytes()
	return &encoded{canonical: c, frontmatter: c[f0:f1], resources: c[r0:r1], uri: c[u0:u1], digest: sha256.Sum256(c)}, nil
}

// Digest returns the SHA-256 of the canonical encoding.
func (s *Set) Digest() ([]byte, error) {
	e, err := s.encode()
	if err != nil {
		return nil, err
	}
	return e.digest[:], nil
}

// Statement is the in-toto v1 Statement a bundle's DSSE envelope carries.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// parsedStatement is a statement as parseStatement decodes it: the
// predicate, only needed to explain a mismatch, stays undecoded, which
// halves the cost of decoding a statement.
type parsedStatement struct {
	Type          string          `json:"_type"`
	Subject       []Subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// Subject names the skill and the digest of its canonical resource set.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Predicate repeats the canonical encoding's parts, so that a verifier
// can say which one differs.
type Predicate struct {
	Frontmatter json.RawMessage `json:"frontmatter"`
	Resources   []Resource      `json:"resources"`
}

// Statement returns the JSON of the in-toto statement over s.
func (s *Set) Statement() ([]byte, error) {
	e, err := s.encode()
	if err != nil {
		return nil, err
	}
	return e.statement(), nil
}

// The statement's constant parts, between the set's.
var (
	stmtHead      = []byte(`{"_type":"` + statementType + `","subject":[{"name":`)
	stmtDigest    = []byte(`,"digest":{"sha256":"`)
	stmtPredicate = []byte(`"}}],"predicateType":"` + PredicateType + `","predicate":{"frontmatter":`)
	stmtResources = []byte(`,"resources":`)
	stmtEnd       = []byte(`}}`)
)

// statementParts is the statement over the set, in order: what
// encoding/json writes for the Statement (TestCanonicalEncoding holds it
// to that), from the canonical encoding's parts. hexDigest is filled with
// the set's digest in hex.
func (e *encoded) statementParts(hexDigest *[2 * sha256.Size]byte) [9][]byte {
	hex.Encode(hexDigest[:], e.digest[:])
	return [9][]byte{stmtHead, e.uri, stmtDigest, hexDigest[:], stmtPredicate, e.frontmatter, stmtResources, e.resources, stmtEnd}
}

// statement returns the statement over the set.
func (e *encoded) statement() []byte {
	var d [2 * sha256.Size]byte
	parts := e.statementParts(&d)
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// isStatement reports whether payload is byte for byte the statement
// over the set, without writing that statement.
func (e *encoded) isStatement(payload []byte) bool {
	var d [2 * sha256.Size]byte
	for _, p := range e.statementParts(&d) {
		if !bytes.HasPrefix(payload, p) {
			return false
		}
		payload = payload[len(p):]
	}
	return len(payload) == 0
}

// parseStatement decodes a statement payload and checks its shape: the
// in-toto type, our predicate type, and one subject with a sha256
// digest. The predicate is left raw; Predicate decodes it.
func parseStatement(payload []byte) (*parsedStatement, error) {
	if len(payload) > MaxBundleBytes {
		return nil, fmt.Errorf("statement is %d bytes, over the %d-byte limit", len(payload), MaxBundleBytes)
	}
	var st parsedStatement
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, fmt.Errorf("statement is not valid JSON: %w", err)
	}
	switch {
	case st.Type != statementType:
		return nil, fmt.Errorf("statement _type is %q, want %q", st.Type, statementType)
	case st.PredicateType != PredicateType:
		return nil, fmt.Errorf("statement predicateType is %q, want %q", st.PredicateType, PredicateType)
	case len(st.Subject) != 1:
		return nil, fmt.Errorf("statement has %d subjects, want 1 (the skill)", len(st.Subject))
	}
	d, err := hex.DecodeString(st.Subject[0].Digest["sha256"])
	if err != nil || len(d) != sha256.Size {
		return nil, errors.New("statement subject has no valid sha256 digest")
	}
	return &st, nil
}

// diff says which part of got differs from want, for an error message.
func (st *parsedStatement) diff(want *Set) string {
	if st.Subject[0].Name != want.URI {
		return fmt.Sprintf("it was made for %s, not %s (a signature moved to another skill)", st.Subject[0].Name, want.URI)
	}
	var pred Predicate
	if err := json.Unmarshal(st.Predicate, &pred); err != nil {
		return "the signed resource set differs (its predicate does not decode: " + err.Error() + ")"
	}
	signed := map[string]Resource{}
	for _, r := range pred.Resources {
		signed[r.URI] = r
	}
	for _, r := range want.Resources {
		s, ok := signed[r.URI]
		if !ok {
			return fmt.Sprintf("file %s was added after signing", r.URI)
		}
		if s != r {
			return fmt.Sprintf("file %s changed after signing", r.URI)
		}
		delete(signed, r.URI)
	}
	for u := range signed {
		return fmt.Sprintf("file %s was removed after signing", u)
	}
	if a, _ := canonicalJSON(pred.Frontmatter); !bytes.Equal(a, mustCanonical(want.Frontmatter)) {
		return "the frontmatter changed after signing"
	}
	return "the signed resource set differs"
}

func mustCanonical(raw json.RawMessage) []byte {
	b, _ := canonicalJSON(raw)
	return b
}

// canonicalJSON re-encodes raw: Go sorts map keys by byte and keeps
// json.Number literals as written.
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	w := newJSONWriter(len(raw))
	if err := w.canonical(raw); err != nil {
		return nil, err
	}
	return w.b.Bytes(), nil
}

// jsonWriter writes JSON values one after another into one buffer, each
// as encode writes it.
type jsonWriter struct {
	b   bytes.Buffer
	enc *json.Encoder
}

func newJSONWriter(size int) *jsonWriter {
	w := &jsonWriter{}
	w.b.Grow(size)
	w.enc = json.NewEncoder(&w.b)
	w.enc.SetEscapeHTML(false)
	return w
}

// value writes v as encode does: no HTML escaping, no newline.
func (w *jsonWriter) value(v any) error {
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	w.b.Truncate(w.b.Len() - 1) // Encode ends every value with a newline
	return nil
}

// canonical writes raw as canonicalJSON returns it.
func (w *jsonWriter) canonical(raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		w.b.WriteString("null")
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return w.value(v)
}

func encode(v any) ([]byte, error) {
	w := newJSONWriter(0)
	if err := w.value(v); err != nil {
		return nil, err
	}
	return w.b.Bytes(), nil
}
