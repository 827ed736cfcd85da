package signature

import (
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	sigsig "github.com/sigstore/sigstore/pkg/signature"
)

// Identity names who signed a skill: a key (KeyID), or a keyless
// signer, the OIDC issuer and subject of a Fulcio certificate.
type Identity struct {
	KeyID   string `json:"keyId,omitempty"`
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// IsZero reports whether id names nobody (an unsigned skill).
func (id Identity) IsZero() bool { return id == Identity{} }

// String is how messages name the signer.
func (id Identity) String() string {
	switch {
	case id.KeyID != "":
		return "key " + short(id.KeyID)
	case id.IsZero():
		return "nobody"
	}
	return fmt.Sprintf("%s (issuer %s)", id.Subject, id.Issuer)
}

// Keyless is a keyless signer a trust policy allows: the certificate's
// OIDC issuer, exactly, and a regular expression its subject (the
// certificate's SAN: an e-mail address or a workflow URI) must match as
// a whole.
type Keyless struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
}

// Trust is what a Verifier accepts.
type Trust struct {
	// Keys are PEM public keys (cosign.pub); a key-based bundle verifies
	// when one of them signed it.
	Keys [][]byte
	// Keyless are the keyless signers allowed; they need Root.
	Keyless []Keyless
	// Root is a Sigstore trusted root (trusted_root.json): the Fulcio
	// certificate authorities and Rekor logs a keyless bundle is checked
	// against, offline.
	Root []byte
}

// Verifier checks bundles against trusted keys and keyless identities.
// Everything it trusts is parsed once, when it is made, and it is safe
// for concurrent use: a host verifies a whole listing with one.
type Verifier struct {
	keys    root.TrustedMaterial
	ids     []string
	keyless *verify.Verifier
	allowed []allowedIdentity
	policy  []verify.PolicyOption

	// verified remembers the bundles already verified, by their hash
	// (maphash, seeded per Verifier: a collision could only return a
	// signer that signed this very set, since the set is compared too):
	// a host lists a server again on every change notification, and the
	// bundles of the skills that did not change verify again for the cost
	// of a hash and the set's digest. A bundle's verdict does not depend
	// on the time it is checked (a certificate is checked against the
	// log's time), so it is not revisited.
	mu       sync.Mutex
	seed     maphash.Seed
	verified map[uint64]verdict
}

// verdict is a verified bundle's statement subject and signer.
type verdict struct {
	name   string
	digest [sha256.Size]byte
	id     Identity
}

// maxVerified bounds Verifier.verified; when full it starts over.
const maxVerified = 1 << 14

type allowedIdentity struct {
	Keyless
	re *regexp.Regexp
}

// LoadVerifier is NewVerifier for public keys alone.
func LoadVerifier(pemKeys ...[]byte) (*Verifier, error) {
	return NewVerifier(Trust{Keys: pemKeys})
}

// NewVerifier parses t once for every bundle the Verifier checks.
func NewVerifier(t Trust) (*Verifier, error) {
	v := &Verifier{seed: maphash.MakeSeed()}
	keys := map[string]*root.ExpiringKey{}
	for _, p := range t.Keys {
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(p)
		if err != nil {
			return nil, fmt.Errorf("not a PEM public key: %w", err)
		}
		if _, err := algorithm(pub); err != nil {
			return nil, err
		}
		sv, err := sigsig.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, err
		}
		id, err := KeyID(pub)
		if err != nil {
			return nil, err
		}
		keys[id] = root.NewExpiringKey(sv, time.Time{}, time.Time{})
		v.ids = append(v.ids, id)
	}
	v.keys = root.NewTrustedPublicKeyMaterialFromMapping(keys)
	if len(t.Keyless) > 0 && len(t.Root) == 0 {
		return nil, errors.New("keyless identities need a trusted root (trusted_root.json) to be checked against")
	}
	if len(t.Root) > 0 {
		tr, err := root.NewTrustedRootFromJSON(t.Root)
		if err != nil {
			return nil, fmt.Errorf("not a Sigstore trusted root: %w", err)
		}
		// A keyless bundle must prove its log inclusion (checked from the
		// bundle, offline), and the certificate must have been valid when
		// the log integrated it.
		if v.keyless, err = verify.NewVerifier(tr, verify.WithTransparencyLog(1), verify.WithIntegratedTimestamps(1)); err != nil {
			return nil, err
		}
	}
	for _, k := range t.Keyless {
		if k.Issuer == "" || k.Subject == "" {
			return nil, errors.New("a keyless identity needs both an issuer and a subject pattern")
		}
		re, err := regexp.Compile("^(?:" + k.Subject + ")$")
		if err != nil {
			return nil, fmt.Errorf("subject pattern %q: %w", k.Subject, err)
		}
		ci, err := verify.NewShortCertificateIdentity(k.Issuer, "", "", re.String())
		if err != nil {
			return nil, fmt.Errorf("keyless identity %s: %w", k.Subject, err)
		}
		v.allowed = append(v.allowed, allowedIdentity{k, re})
		v.policy = append(v.policy, verify.WithCertificateIdentity(ci))
	}
	if len(v.ids) == 0 && len(v.allowed) == 0 {
		return nil, errors.New("no trusted key or keyless identity given")
	}
	return v, nil
}

// Verify checks that raw is a bundle over set signed by a trusted key or
// an allowed keyless identity, and returns the signer. The error says
// why not: another signer, another skill, changed content, a bad
// signature, an expired certificate.
func (v *Verifier) Verify(set *Set, raw []byte) (Identity, error) {
	key := maphash.Bytes(v.seed, raw)
	v.mu.Lock()
	seen, ok := v.verified[key]
	v.mu.Unlock()
	if ok {
		e, err := set.encode()
		if err == nil && seen.name == set.URI && seen.digest == e.digest {
			return seen.id, nil
		}
		// Another set: verify in full, which says what differs.
	}
	id, e, err := v.verifyFresh(set, raw)
	if err == nil {
		// Verified: the statement's subject is set's URI and digest.
		v.mu.Lock()
		if v.verified == nil || len(v.verified) >= maxVerified {
			v.verified = map[uint64]verdict{}
		}
		v.verified[key] = verdict{set.URI, e.digest, id}
		v.mu.Unlock()
	}
	return id, err
}

// verifyFresh is Verify without the memory of verified bundles; it
// returns the set's encoding, which it computed to match the statement.
func (v *Verifier) verifyFresh(set *Set, raw []byte) (Identity, *encoded, error) {
	b, payload, id, err := open(raw)
	if err != nil {
		return id, nil, err
	}
	if id.KeyID != "" {
		if !slices.Contains(v.ids, id.KeyID) {
			return id, nil, fmt.Errorf("signed by key %s, which is not a trusted key", short(id.KeyID))
		}
		e, err := match(set, payload)
		if err != nil {
			return id, nil, err
		}
		// The statement's binding to set is checked above, from the
		// payload as it is; what is left is the DSSE signature over it.
		// sigstore-go's whole-bundle Verify would decode the statement
		// again and check time constraints a key without validity period
		// does not have.
		if err := v.checkKeySignature(b); err != nil {
			return id, nil, err
		}
		return id, e, nil
	}
	if v.keyless == nil {
		return id, nil, fmt.Errorf("signed keyless by %s, and no keyless signer is trusted (a trust policy's keyless identities and trusted root)", id)
	}
	if !slices.ContainsFunc(v.allowed, func(a allowedIdentity) bool { return a.Issuer == id.Issuer && a.re.MatchString(id.Subject) }) {
		return id, nil, fmt.Errorf("signed by %s, which the trust policy does not allow", id)
	}
	e, err := match(set, payload)
	if err != nil {
		return id, nil, err
	}
	if _, err := v.keyless.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", e.digest[:]), v.policy...)); err != nil {
		return id, nil, fmt.Errorf("bad signature: %w", err)
	}
	return id, e, nil
}

// checkKeySignature checks a key-based bundle's DSSE signature against
// the trusted keys (sigstore-go does the cryptography).
func (v *Verifier) checkKeySignature(b *bundle.Bundle) error {
	vc, err := b.VerificationContent()
	if err != nil {
		return fmt.Errorf("bad signature: %w", err)
	}
	sc, err := b.SignatureContent()
	if err != nil {
		return fmt.Errorf("bad signature: %w", err)
	}
	if err := verify.VerifySignature(sc, vc, v.keys); err != nil {
		return fmt.Errorf("bad signature: %w", err)
	}
	return nil
}

// Result is the outcome of one bundle of VerifyAll.
type Result struct {
	Signer Identity
	Err    error
}

// VerifyAll verifies bundles[i] against sets[i] for every i, on as many
// goroutines as there are CPUs: a listing's signatures are independent,
// and each check is mostly one public-key operation.
func (v *Verifier) VerifyAll(sets []*Set, bundles [][]byte) []Result {
	out := make([]Result, len(sets))
	workers := min(runtime.GOMAXPROCS(0), len(sets))
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				out[i].Signer, out[i].Err = v.Verify(sets[i], bundles[i])
			}
		})
	}
	for i := range sets {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// signer names who signed b, from its key hint or its certificate,
// before anything is verified.
func signer(b *bundle.Bundle) (Identity, error) {
	if pk := b.GetVerificationMaterial().GetPublicKey(); pk != nil {
		if pk.GetHint() == "" {
			return Identity{}, errors.New("bundle names no key (empty public key hint)")
		}
		return Identity{KeyID: pk.GetHint()}, nil
	}
	vc, err := b.VerificationContent()
	if err != nil {
		return Identity{}, fmt.Errorf("bundle verification material: %w", err)
	}
	cert := vc.Certificate()
	if cert == nil {
		return Identity{}, errors.New("bundle carries neither a key hint nor a certificate")
	}
	sum, err := certificate.SummarizeCertificate(cert)
	if err != nil {
		return Identity{}, fmt.Errorf("bundle certificate: %w", err)
	}
	return Identity{Issuer: sum.Issuer, Subject: sum.SubjectAlternativeName}, nil
}

// match checks, without a key, that a statement payload covers exactly
// set, and returns the set's encoding. A payload that is byte for byte
// the statement this package writes for set matches without being
// decoded; any other (another signer's encoder, or another set) is
// decoded and its subject compared.
func match(set *Set, payload []byte) (*encoded, error) {
	e, err := set.encode()
	if err != nil {
		return nil, err
	}
	if e.isStatement(payload) {
		return e, nil
	}
	st, err := parseStatement(payload)
	if err != nil {
		return nil, err
	}
	if st.Subject[0].Name != set.URI || st.Subject[0].Digest["sha256"] != hex.EncodeToString(e.digest[:]) {
		return nil, fmt.Errorf("signature does not match: %s", st.diff(set))
	}
	return e, nil
}

// Inspect parses raw and matches it against set without trusted
// material, returning the signer it names: the signature itself cannot
// be checked without the key or trusted root, the binding can.
func Inspect(set *Set, raw []byte) (Identity, error) {
	_, payload, id, err := open(raw)
	if err != nil {
		return id, err
	}
	_, err = match(set, payload)
	return id, err
}

// open decodes a bundle and names its signer, nothing verified yet; it
// returns the DSSE payload, the statement's bytes, undecoded.
func open(raw []byte) (*bundle.Bundle, []byte, Identity, error) {
	b, payload, err := decodeBundle(raw)
	if err != nil {
		return nil, nil, Identity{}, err
	}
	id, err := signer(b)
	return b, payload, id, err
}

// parseBundle decodes a bundle and its statement, for a caller that
// needs the statement itself (verifying needs only its bytes: open).
func parseBundle(raw []byte) (*bundle.Bundle, *parsedStatement, error) {
	b, payload, err := decodeBundle(raw)
	if err != nil {
		return nil, nil, err
	}
	st, err := parseStatement(payload)
	if err != nil {
		return nil, nil, err
	}
	return b, st, nil
}

// decodeBundle decodes a bundle's JSON, bounded by MaxBundleBytes, and
// returns its DSSE envelope's payload. The payload is taken from the
// decoded protobuf as it is: sigstore-go's Envelope would encode it in
// base64 again for the caller to decode.
func decodeBundle(raw []byte) (*bundle.Bundle, []byte, error) {
	if len(raw) > MaxBundleBytes {
		return nil, nil, fmt.Errorf("bundle is %d bytes, over the %d-byte limit", len(raw), MaxBundleBytes)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return nil, nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	env := b.GetDsseEnvelope()
	if env == nil || env.GetPayload() == nil {
		return nil, nil, errors.New("bundle holds no DSSE envelope (a message signature is not a skill signature)")
	}
	if env.GetPayloadType() != PayloadType {
		return nil, nil, fmt.Errorf("bundle payload type is %q, want %q", env.GetPayloadType(), PayloadType)
	}
	return &b, env.GetPayload(), nil
}

func short(id string) string {
	if len(id) > 16 {
		return id[:16]
	}
	return id
}
