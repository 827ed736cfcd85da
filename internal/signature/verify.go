package signature

import (
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

	// verified remembers the bundles already verified, by their SHA-256:
	// a host lists a server again on every change notification, and the
	// bundles of the skills that did not change verify again for the cost
	// of a hash and the set's digest. A bundle's verdict does not depend
	// on the time it is checked (a certificate is checked against the
	// log's time), so it is not revisited.
	mu       sync.Mutex
	verified map[[sha256.Size]byte]verdict
}

// verdict is a verified bundle's statement subject and signer.
type verdict struct {
	name, digest string
	id           Identity
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
	v := &Verifier{}
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
	key := sha256.Sum256(raw)
	v.mu.Lock()
	seen, ok := v.verified[key]
	v.mu.Unlock()
	if ok {
		d, err := set.Digest()
		if err == nil && seen.name == set.URI && seen.digest == hex.EncodeToString(d) {
			return seen.id, nil
		}
		// Another set: verify in full, which says what differs.
	}
	id, err := v.verifyFresh(set, raw)
	if err == nil {
		// Verified: the statement's subject is set's URI and digest.
		d, _ := set.Digest()
		v.mu.Lock()
		if v.verified == nil || len(v.verified) >= maxVerified {
			v.verified = map[[sha256.Size]byte]verdict{}
		}
		v.verified[key] = verdict{set.URI, hex.EncodeToString(d), id}
		v.mu.Unlock()
	}
	return id, err
}

// verifyFresh is Verify without the memory of verified bundles.
func (v *Verifier) verifyFresh(set *Set, raw []byte) (Identity, error) {
	b, st, id, err := open(raw)
	if err != nil {
		return id, err
	}
	if id.KeyID != "" {
		if !slices.Contains(v.ids, id.KeyID) {
			return id, fmt.Errorf("signed by key %s, which is not a trusted key", short(id.KeyID))
		}
		if _, err := match(set, st); err != nil {
			return id, err
		}
		// The statement's binding to set is checked above, from the
		// statement already decoded; what is left is the DSSE signature
		// over it. sigstore-go's whole-bundle Verify would decode the
		// statement a second time and check time constraints a key
		// without validity period does not have: the signature check
		// alone is a third of the cost.
		vc, err := b.VerificationContent()
		if err != nil {
			return id, fmt.Errorf("bad signature: %w", err)
		}
		sc, err := b.SignatureContent()
		if err != nil {
			return id, fmt.Errorf("bad signature: %w", err)
		}
		if err := verify.VerifySignature(sc, vc, v.keys); err != nil {
			return id, fmt.Errorf("bad signature: %w", err)
		}
		return id, nil
	}
	if v.keyless == nil {
		return id, fmt.Errorf("signed keyless by %s, and no keyless signer is trusted (a trust policy's keyless identities and trusted root)", id)
	}
	if !slices.ContainsFunc(v.allowed, func(a allowedIdentity) bool { return a.Issuer == id.Issuer && a.re.MatchString(id.Subject) }) {
		return id, fmt.Errorf("signed by %s, which the trust policy does not allow", id)
	}
	d, err := match(set, st)
	if err != nil {
		return id, err
	}
	if _, err := v.keyless.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", d), v.policy...)); err != nil {
		return id, fmt.Errorf("bad signature: %w", err)
	}
	return id, nil
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

// match checks, without a key, that a statement covers exactly set,
// and returns the set's digest.
func match(set *Set, st *parsedStatement) ([]byte, error) {
	d, err := set.Digest()
	if err != nil {
		return nil, err
	}
	if st.Subject[0].Name != set.URI || st.Subject[0].Digest["sha256"] != hex.EncodeToString(d) {
		return nil, fmt.Errorf("signature does not match: %s", st.diff(set))
	}
	return d, nil
}

// Inspect parses raw and matches it against set without trusted
// material, returning the signer it names: the signature itself cannot
// be checked without the key or trusted root, the binding can.
func Inspect(set *Set, raw []byte) (Identity, error) {
	_, st, id, err := open(raw)
	if err != nil {
		return id, err
	}
	_, err = match(set, st)
	return id, err
}

// open decodes a bundle and its statement and names its signer, nothing
// verified yet.
func open(raw []byte) (*bundle.Bundle, *parsedStatement, Identity, error) {
	b, st, err := parseBundle(raw)
	if err != nil {
		return nil, nil, Identity{}, err
	}
	id, err := signer(b)
	return b, st, id, err
}

func short(id string) string {
	if len(id) > 16 {
		return id[:16]
	}
	return id
}
