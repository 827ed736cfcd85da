// Package sigstoretest runs a test Sigstore on loopback: a Fulcio that
// certifies the identity of an OIDC ID token (verified against the
// issuer's published keys, as Fulcio does) and a Rekor that logs entries,
// speaking the HTTP APIs sigstore-go's sign package calls (Fulcio's
// /api/v2/signingCert, Rekor's /api/v1/log/entries). The log and its keys
// are sigstore-go's in-process VirtualSigstore; the certificate authority
// is built with the same package's generators, since issuing a certificate
// for the client's own key needs the CA's private key. Trusted root
// material for hosts comes with it.
package sigstoretest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-openapi/runtime"
	"github.com/go-openapi/strfmt"
	"github.com/sigstore/rekor/pkg/generated/models"
	"github.com/sigstore/rekor/pkg/types"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	sigsig "github.com/sigstore/sigstore/pkg/signature"

	"github.com/skillport/skillport/internal/oidctest"

	// The entry kinds the test log accepts, as Rekor registers them.
	_ "github.com/sigstore/rekor/pkg/types/dsse/v0.0.1"
	_ "github.com/sigstore/rekor/pkg/types/hashedrekord/v0.0.1"
)

// Audience is the audience ("aud") the test Fulcio requires of an ID
// token, the public Fulcio's.
const Audience = "sigstore"

// maxRequestBytes bounds a request body either service reads.
const maxRequestBytes = 1 << 20

// Sigstore is a test Fulcio and Rekor on loopback.
type Sigstore struct {
	// FulcioURL and RekorURL are the services' base URLs, as
	// --fulcio-url and --rekor-url take them.
	FulcioURL, RekorURL string

	// CertAge is how old a certificate is when Fulcio issues it (its
	// validity is 10 minutes from then): to make certificates that are
	// near their end. Set it before the first request.
	CertAge time.Duration

	issuers []string
	vs      *ca.VirtualSigstore
	fulcio  *root.FulcioCertificateAuthority
	caKey   *ecdsa.PrivateKey

	mu           sync.Mutex
	certificates int // certificates issued
	entries      int // log entries made
	rootJSON     []byte
}

// Start runs a test Fulcio that certifies ID tokens of the given OIDC
// issuers (their keys fetched by OpenID discovery) and a test Rekor,
// both closed when t ends.
func Start(t testing.TB, issuers ...string) *Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	rootCert, rootKey, err := ca.GenerateRootCa()
	if err != nil {
		t.Fatal(err)
	}
	inter, interKey, err := ca.GenerateFulcioIntermediate(rootCert, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	s := &Sigstore{
		issuers: issuers,
		vs:      vs,
		caKey:   interKey,
		fulcio: &root.FulcioCertificateAuthority{
			Root: rootCert, Intermediates: []*x509.Certificate{inter}, URI: "https://fulcio.test",
			ValidityPeriodStart: time.Now().Add(-time.Hour), ValidityPeriodEnd: time.Now().Add(24 * time.Hour),
		},
	}
	fm := http.NewServeMux()
	fm.HandleFunc("POST /api/v2/signingCert", s.signingCert)
	f := httptest.NewServer(fm)
	t.Cleanup(f.Close)
	rm := http.NewServeMux()
	rm.HandleFunc("POST /api/v1/log/entries", s.createEntry)
	r := httptest.NewServer(rm)
	t.Cleanup(r.Close)
	s.FulcioURL, s.RekorURL = f.URL, r.URL
	return s
}

// Certificates is how many certificates Fulcio has issued.
func (s *Sigstore) Certificates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.certificates
}

// Entries is how many entries Rekor has logged.
func (s *Sigstore) Entries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries
}

// TrustedRoot returns the trusted root a host verifies the bundles of
// this Sigstore against (trusted_root.json): the CA and the log.
func (s *Sigstore) TrustedRoot(t testing.TB) []byte {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rootJSON == nil {
		s.rootJSON = trustedRoot(t, s.vs, []root.CertificateAuthority{s.fulcio})
	}
	return s.rootJSON
}

// VirtualRoot returns the trusted root of sigstore-go's in-process
// VirtualSigstore vs: its own CA, logs and timestamp authority.
func VirtualRoot(t testing.TB, vs *ca.VirtualSigstore) []byte {
	t.Helper()
	return trustedRoot(t, vs, vs.FulcioCertificateAuthorities())
}

// trustedRoot is the trusted-root JSON of the CAs and vs's logs.
func trustedRoot(t testing.TB, vs *ca.VirtualSigstore, cas []root.CertificateAuthority) []byte {
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas,
		rawLogIDs(t, vs.CTLogs()), vs.TimestampingAuthorities(), rawLogIDs(t, vs.RekorLogs()))
	if err != nil {
		t.Fatal(err)
	}
	js, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// rawLogIDs gives the VirtualSigstore's logs the raw key ID a trusted-root
// file holds: the in-process logs carry it hex-encoded.
func rawLogIDs(t testing.TB, logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	out := map[string]*root.TransparencyLog{}
	for k, l := range logs {
		c := *l
		id, err := hex.DecodeString(k)
		if err != nil {
			t.Fatal(err)
		}
		c.ID = id
		out[k] = &c
	}
	return out
}

// apiError answers as Fulcio's and Rekor's gateways do: a JSON code and
// message.
func apiError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg})
}

// IDToken is an ID token of op for the verified e-mail address email,
// for the audience Fulcio requires, valid for 5 minutes: the identity the
// test Fulcio certifies.
func IDToken(t testing.TB, op *oidctest.OP, email string) string {
	now := time.Now()
	return op.Sign(t, nil, map[string]any{
		"iss": op.URL, "sub": "user-1", "aud": Audience, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"email": email, "email_verified": true,
	})
}

// certRequest is Fulcio's v2 signing certificate request.
type certRequest struct {
	PublicKeyRequest struct {
		PublicKey struct {
			Algorithm string `json:"algorithm"`
			Content   string `json:"content"`
		} `json:"publicKey"`
		ProofOfPossession []byte `json:"proofOfPossession"`
	} `json:"publicKeyRequest"`
}

// signingCert verifies the bearer ID token, and the proof that the
// caller holds the key (its signature of the token's subject), and
// certifies the key for the token's identity for 10 minutes.
func (s *Sigstore) signingCert(w http.ResponseWriter, r *http.Request) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		apiError(w, http.StatusUnauthorized, 16, "There was an error processing the identity token")
		return
	}
	subject, issuer, err := s.verifyToken(r.Context(), raw)
	if err != nil {
		apiError(w, http.StatusUnauthorized, 16, "There was an error processing the identity token")
		return
	}
	var req certRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes)).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, 3, "The public key supplied in the request could not be parsed")
		return
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey([]byte(req.PublicKeyRequest.PublicKey.Content))
	if err != nil {
		apiError(w, http.StatusBadRequest, 3, "The public key supplied in the request could not be parsed")
		return
	}
	v, err := sigsig.LoadVerifier(pub, crypto.SHA256)
	if err == nil {
		err = v.VerifySignature(bytes.NewReader(req.PublicKeyRequest.ProofOfPossession), strings.NewReader(subject))
	}
	if err != nil {
		apiError(w, http.StatusBadRequest, 3, "The signature supplied in the request could not be verified")
		return
	}
	leaf, err := ca.GenerateLeafCert(subject, issuer, time.Now().Add(-s.CertAge).Truncate(time.Second), publicOnly{pub}, s.fulcio.Intermediates[0], s.caKey)
	if err != nil {
		apiError(w, http.StatusInternalServerError, 13, err.Error())
		return
	}
	var chain []string
	for _, c := range []*x509.Certificate{leaf, s.fulcio.Intermediates[0], s.fulcio.Root} {
		chain = append(chain, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})))
	}
	s.mu.Lock()
	s.certificates++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"signedCertificateEmbeddedSct": map[string]any{"chain": map[string]any{"certificates": chain}}})
}

// verifyToken verifies an ID token of one of the configured issuers, for
// the audience sigstore, and returns the identity Fulcio certifies: a
// verified e-mail address, else the subject.
func (s *Sigstore) verifyToken(ctx context.Context, raw string) (subject, issuer string, err error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "", "", errors.New("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", "", err
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &unverified); err != nil {
		return "", "", err
	}
	if !slices.Contains(s.issuers, unverified.Issuer) {
		return "", "", fmt.Errorf("issuer %s is not configured", unverified.Issuer)
	}
	p, err := oidc.NewProvider(ctx, unverified.Issuer)
	if err != nil {
		return "", "", err
	}
	tok, err := p.Verifier(&oidc.Config{ClientID: Audience}).Verify(ctx, raw)
	if err != nil {
		return "", "", err
	}
	var c struct {
		Email    string `json:"email"`
		Verified bool   `json:"email_verified"`
	}
	if err := tok.Claims(&c); err != nil {
		return "", "", err
	}
	switch {
	case c.Email != "" && !c.Verified:
		return "", "", errors.New("e-mail address not verified")
	case c.Email != "":
		return c.Email, tok.Issuer, nil
	}
	return tok.Subject, tok.Issuer, nil
}

// publicOnly lets ca.GenerateLeafCert certify a key whose private half
// is the client's: the generator only asks for the public key.
type publicOnly struct{ pub crypto.PublicKey }

func (p publicOnly) Public() crypto.PublicKey { return p.pub }
func (publicOnly) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("sigstoretest: the client holds the private key")
}

// createEntry logs a proposed entry as Rekor does: the entry type
// validates it (a DSSE entry's signatures must verify with the key or
// certificate it names) and canonicalizes it into the logged body; the
// answer carries the entry's inclusion proof and signed entry timestamp.
// Each entry is the one leaf of its own tree (VirtualSigstore's log).
func (s *Sigstore) createEntry(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	pe, err := models.UnmarshalProposedEntry(io.LimitReader(r.Body, maxRequestBytes), runtime.JSONConsumer())
	if err != nil {
		apiError(w, http.StatusBadRequest, http.StatusBadRequest, "the proposed entry does not decode: "+err.Error())
		return
	}
	entry, err := types.CreateVersionedEntry(pe)
	if err != nil {
		apiError(w, http.StatusBadRequest, http.StatusBadRequest, err.Error())
		return
	}
	leaf, err := types.CanonicalizeEntry(ctx, entry)
	if err != nil {
		apiError(w, http.StatusBadRequest, http.StatusBadRequest, err.Error())
		return
	}
	logID, err := s.vs.RekorLogID()
	if err != nil {
		apiError(w, http.StatusInternalServerError, http.StatusInternalServerError, err.Error())
		return
	}
	integrated, index := time.Now().Unix(), int64(0)
	body := base64.StdEncoding.EncodeToString(leaf)
	set, err := s.vs.RekorSignPayload(tlog.RekorPayload{LogID: logID, IntegratedTime: integrated, LogIndex: index, Body: body})
	if err != nil {
		apiError(w, http.StatusInternalServerError, http.StatusInternalServerError, err.Error())
		return
	}
	proof, err := s.vs.GetInclusionProof(leaf)
	if err != nil {
		apiError(w, http.StatusInternalServerError, http.StatusInternalServerError, err.Error())
		return
	}
	h := sha256.Sum256(append([]byte{0}, leaf...))
	uuid := hex.EncodeToString(h[:])
	s.mu.Lock()
	s.entries++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", uuid)
	w.Header().Set("Location", "/api/v1/log/entries/"+uuid)
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(models.LogEntry{uuid: models.LogEntryAnon{
		Body: body, IntegratedTime: &integrated, LogID: &logID, LogIndex: &index,
		Verification: &models.LogEntryAnonVerification{InclusionProof: proof, SignedEntryTimestamp: strfmt.Base64(set)},
	}})
}

// Key returns a new ECDSA P-256 key pair as PEM: the private key (PKCS
// #8, unencrypted, as `skillport sign --key` and signature.LoadSigner read
// it) and its public key (PKIX, as --trusted-key reads it). Tests of every
// package that signs share it, so a key is made one way everywhere.
func Key(t testing.TB) (priv, pub []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
}
