package signature

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	sigsig "github.com/sigstore/sigstore/pkg/signature"
)

// KeyID returns the hint a bundle names its key by: the hex SHA-256 of
// the public key's DER (PKIX) encoding.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	d := sha256.Sum256(der)
	return hex.EncodeToString(d[:]), nil
}

// algorithm picks the Sigstore algorithm of a key: ECDSA P-256 with
// SHA-256, or pure Ed25519, the two the slice supports.
func algorithm(pub crypto.PublicKey) (protocommon.PublicKeyDetails, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return 0, fmt.Errorf("ECDSA key on %s; only P-256 is supported", k.Curve.Params().Name)
		}
		return protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256, nil
	case ed25519.PublicKey:
		return protocommon.PublicKeyDetails_PKIX_ED25519, nil
	default:
		return 0, fmt.Errorf("%T keys are not supported; use ECDSA P-256 or Ed25519", pub)
	}
}

// Signer signs resource sets with one private key.
type Signer struct {
	priv crypto.Signer
	alg  sigsig.AlgorithmDetails
	id   string
}

// LoadSigner reads a PEM private key: PKCS#8 or SEC 1, or cosign's
// encrypted format ("ENCRYPTED SIGSTORE PRIVATE KEY" / "ENCRYPTED COSIGN
// PRIVATE KEY") opened with passphrase.
func LoadSigner(pemBytes, passphrase []byte) (*Signer, error) {
	pf := cryptoutils.StaticPasswordFunc(passphrase)
	k, err := cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, pf)
	if err != nil {
		if strings.Contains(string(pemBytes), "ENCRYPTED") && len(passphrase) == 0 {
			return nil, errors.New("the key is encrypted; set SKILLPORT_KEY_PASSWORD (or COSIGN_PASSWORD) to its passphrase")
		}
		return nil, fmt.Errorf("not a PEM private key: %w", err)
	}
	priv, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%T is not a signing key", k)
	}
	a, err := algorithm(priv.Public())
	if err != nil {
		return nil, err
	}
	alg, err := sigsig.GetAlgorithmDetails(a)
	if err != nil {
		return nil, err
	}
	id, err := KeyID(priv.Public())
	if err != nil {
		return nil, err
	}
	return &Signer{priv: priv, alg: alg, id: id}, nil
}

// KeyID is the hint the signer's bundles carry.
func (s *Signer) KeyID() string { return s.id }

// Sign returns the JSON of a Sigstore bundle (v0.3) whose DSSE envelope
// holds the in-toto statement over set.
func (s *Signer) Sign(set *Set) ([]byte, error) {
	st, err := set.Statement()
	if err != nil {
		return nil, err
	}
	b, err := sign.Bundle(&sign.DSSEData{Data: st, PayloadType: PayloadType}, (*keypair)(s), sign.BundleOptions{})
	if err != nil {
		return nil, fmt.Errorf("signature: %s: %w", set.URI, err)
	}
	pb, err := bundle.NewBundle(b)
	if err != nil {
		return nil, err
	}
	return pb.MarshalJSON()
}

// keypair adapts a Signer to sigstore-go's sign.Keypair.
type keypair Signer

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.alg.GetProtoHashType() }
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.alg.GetSignatureAlgorithm()
}
func (k *keypair) GetHint() []byte                { return []byte(k.id) }
func (k *keypair) GetPublicKey() crypto.PublicKey { return k.priv.Public() }
func (k *keypair) GetKeyAlgorithm() string {
	if _, ok := k.priv.Public().(ed25519.PublicKey); ok {
		return "ED25519"
	}
	return "ECDSA"
}
func (k *keypair) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.priv.Public())
	return string(b), err
}

// SignData signs the DSSE pre-authentication encoding: ECDSA signs its
// SHA-256, Ed25519 the data itself.
func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	hf := k.alg.GetHashType()
	msg := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		msg = h.Sum(nil)
	}
	sig, err := k.priv.Sign(rand.Reader, msg, hf)
	return sig, msg, err
}

// Verifier checks bundles against trusted public keys.
type Verifier struct {
	v   *verify.Verifier
	ids []string
}

// LoadVerifier reads PEM public keys (cosign.pub, or any PKIX PEM); a
// bundle verifies when one of them signed it.
func LoadVerifier(pemKeys ...[]byte) (*Verifier, error) {
	keys := map[string]*root.ExpiringKey{}
	var ids []string
	for _, p := range pemKeys {
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
		ids = append(ids, id)
	}
	if len(keys) == 0 {
		return nil, errors.New("no trusted key given")
	}
	v, err := verify.NewVerifier(root.NewTrustedPublicKeyMaterialFromMapping(keys), verify.WithNoObserverTimestamps())
	if err != nil {
		return nil, err
	}
	return &Verifier{v: v, ids: ids}, nil
}

// ParseBundle decodes a bundle's JSON, bounded by MaxBundleBytes, and
// its statement.
func ParseBundle(raw []byte) (*bundle.Bundle, *Statement, error) {
	if len(raw) > MaxBundleBytes {
		return nil, nil, fmt.Errorf("bundle is %d bytes, over the %d-byte limit", len(raw), MaxBundleBytes)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return nil, nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	env, err := b.Envelope()
	if err != nil || env == nil {
		return nil, nil, errors.New("bundle holds no DSSE envelope (a message signature is not a skill signature)")
	}
	if env.PayloadType != PayloadType {
		return nil, nil, fmt.Errorf("bundle payload type is %q, want %q", env.PayloadType, PayloadType)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, nil, fmt.Errorf("bundle payload: %w", err)
	}
	st, err := ParseStatement(payload)
	if err != nil {
		return nil, nil, err
	}
	return &b, st, nil
}

// Hint returns the key hint a bundle names, "" for a certificate.
func hint(b *bundle.Bundle) string {
	if pk := b.GetVerificationMaterial().GetPublicKey(); pk != nil {
		return pk.GetHint()
	}
	return ""
}

// Verify checks that raw is a bundle over set signed by a trusted key.
// The error says why not: another key, another skill, changed content.
func (v *Verifier) Verify(set *Set, raw []byte) error {
	b, st, err := ParseBundle(raw)
	if err != nil {
		return err
	}
	h := hint(b)
	if h == "" {
		return errors.New("bundle carries a certificate (keyless); only key-based signatures are supported")
	}
	if !slices.Contains(v.ids, h) {
		return fmt.Errorf("signed by key %s, which is not a trusted key", short(h))
	}
	if err := Match(set, st); err != nil {
		return err
	}
	d, err := set.Digest()
	if err != nil {
		return err
	}
	if _, err := v.v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", d), verify.WithKey())); err != nil {
		return fmt.Errorf("bad signature: %w", err)
	}
	return nil
}

// Match checks, without a key, that a statement covers exactly set.
func Match(set *Set, st *Statement) error {
	d, err := set.Digest()
	if err != nil {
		return err
	}
	if st.Subject[0].Name != set.URI || st.Subject[0].Digest["sha256"] != hex.EncodeToString(d) {
		return fmt.Errorf("signature does not match: %s", st.diff(set))
	}
	return nil
}

// Inspect parses raw and matches it against set without a trusted key,
// returning the signing key's hint: the signature itself cannot be
// checked without the key, the binding can.
func Inspect(set *Set, raw []byte) (keyID string, err error) {
	b, st, err := ParseBundle(raw)
	if err != nil {
		return "", err
	}
	if err := Match(set, st); err != nil {
		return hint(b), err
	}
	return hint(b), nil
}

func short(id string) string {
	if len(id) > 16 {
		return id[:16]
	}
	return id
}
