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
	"strings"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/sign"
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

// Identity names the signer as a verifier will: by its key.
func (s *Signer) Identity() Identity { return Identity{KeyID: s.id} }

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
