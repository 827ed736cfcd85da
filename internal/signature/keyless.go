package signature

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/sigstore/rekor/pkg/generated/client/entries"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/sign"
)

// The public Sigstore instance, the default of keyless signing.
const (
	DefaultFulcioURL = "https://fulcio.sigstore.dev"
	DefaultRekorURL  = "https://rekor.sigstore.dev"
)

// FulcioAudience is the audience ("aud") the public Fulcio requires of
// an ID token.
const FulcioAudience = "sigstore"

// DefaultKeylessTimeout bounds each request to Fulcio and to Rekor.
const DefaultKeylessTimeout = 30 * time.Second

// renewBefore is how long before its certificate expires a keyless
// signer gets a new one: Fulcio's certificates live 10 minutes, and a
// log entry integrated after the certificate expired never verifies.
const renewBefore = 2 * time.Minute

// KeylessOptions configure keyless signing.
type KeylessOptions struct {
	// IDToken is the OIDC ID token Fulcio certifies the identity of.
	IDToken string
	// FulcioURL and RekorURL default to the public Sigstore instance.
	FulcioURL, RekorURL string
	// Timeout bounds each request (default [DefaultKeylessTimeout]).
	Timeout time.Duration
}

// KeylessSigner signs resource sets keylessly: an ephemeral key, a
// Fulcio certificate binding it to the ID token's identity, and a Rekor
// entry per bundle, all through sigstore-go's sign package. One
// certificate serves every skill of a run, renewed when it nears its end.
type KeylessSigner struct {
	opts   KeylessOptions
	claims tokenClaims
	rekor  *sign.Rekor

	mu       sync.Mutex
	kp       *sign.EphemeralKeypair
	cert     []byte // DER
	notAfter time.Time
	id       Identity
}

// tokenClaims are the ID token's claims, read without verification (Fulcio
// verifies the token) to explain a refusal.
type tokenClaims struct {
	Issuer        string           `json:"iss"`
	Subject       string           `json:"sub"`
	Audience      jwt.Audience     `json:"aud"`
	Expiry        *jwt.NumericDate `json:"exp"`
	Email         string           `json:"email"`
	EmailVerified any              `json:"email_verified"`
}

// tokenAlgorithms are the JWS algorithms an ID token may name; the
// signature itself is Fulcio's to check.
var tokenAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// readClaims decodes an ID token's claims without verifying it.
func readClaims(token string) (tokenClaims, error) {
	var c tokenClaims
	tok, err := jwt.ParseSigned(strings.TrimSpace(token), tokenAlgorithms)
	if err != nil {
		return c, fmt.Errorf("the ID token is not a signed JWT (%v); give the raw token, three base64url parts joined by dots", err)
	}
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		return c, fmt.Errorf("the ID token's claims do not decode: %v", err)
	}
	return c, nil
}

// expired says, when the token has expired, since when.
func (c tokenClaims) expired(now time.Time) string {
	if c.Expiry == nil || now.Before(c.Expiry.Time()) {
		return ""
	}
	return fmt.Sprintf("the ID token expired at %s (%s ago); get a fresh one (CI tokens last minutes)",
		c.Expiry.Time().UTC().Format(time.RFC3339), now.Sub(c.Expiry.Time()).Round(time.Second))
}

// NewKeylessSigner checks the token's expiry, makes an ephemeral key and
// gets its certificate from Fulcio, so that the signer's identity is
// known before anything is signed.
func NewKeylessSigner(ctx context.Context, o KeylessOptions) (*KeylessSigner, error) {
	if o.FulcioURL == "" {
		o.FulcioURL = DefaultFulcioURL
	}
	if o.RekorURL == "" {
		o.RekorURL = DefaultRekorURL
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultKeylessTimeout
	}
	o.FulcioURL = strings.TrimSuffix(o.FulcioURL, "/")
	o.RekorURL = strings.TrimSuffix(o.RekorURL, "/")
	o.IDToken = strings.TrimSpace(o.IDToken)
	if err := serviceURL("Fulcio", "--fulcio-url", o.FulcioURL); err != nil {
		return nil, err
	}
	if err := serviceURL("Rekor", "--rekor-url", o.RekorURL); err != nil {
		return nil, err
	}
	c, err := readClaims(o.IDToken)
	if err != nil {
		return nil, err
	}
	if msg := c.expired(time.Now()); msg != "" {
		return nil, errors.New(msg)
	}
	s := &KeylessSigner{opts: o, claims: c, rekor: sign.NewRekor(&sign.RekorOptions{BaseURL: o.RekorURL, Timeout: o.Timeout, Retries: 1})}
	if err := s.renew(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// serviceURL checks a service's base URL: https, or http on loopback
// only, since Fulcio is sent the ID token, which anyone who reads it can
// use until it expires.
func serviceURL(service, flag, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("keyless: %s %s is not an http(s) URL (e.g. %s)", flag, raw, map[string]string{"Fulcio": DefaultFulcioURL, "Rekor": DefaultRekorURL}[service])
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return fmt.Errorf("keyless: %s %s would reach %s over plain HTTP; use https (http only on a loopback address)", flag, raw, service)
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Identity is who the certificate names: the token's issuer and subject
// as Fulcio certified them.
func (s *KeylessSigner) Identity() Identity {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// renew makes a new ephemeral key and gets its certificate.
func (s *KeylessSigner) renew(ctx context.Context) error {
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return err
	}
	f := sign.NewFulcio(&sign.FulcioOptions{BaseURL: s.opts.FulcioURL, Timeout: s.opts.Timeout, Retries: 1})
	der, err := f.GetCertificate(ctx, kp, &sign.CertificateProviderOptions{IDToken: s.opts.IDToken})
	if err != nil {
		return s.fulcioError(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("keyless: Fulcio at %s returned a certificate that does not parse: %v", s.opts.FulcioURL, err)
	}
	if !publicKeyEqual(cert, kp) {
		return fmt.Errorf("keyless: Fulcio at %s certified another key than the one it was sent; check --fulcio-url", s.opts.FulcioURL)
	}
	sum, err := certificate.SummarizeCertificate(cert)
	if err != nil {
		return fmt.Errorf("keyless: Fulcio at %s returned a certificate without a Sigstore identity: %v", s.opts.FulcioURL, err)
	}
	s.kp, s.cert, s.notAfter = kp, der, cert.NotAfter
	s.id = Identity{Issuer: sum.Issuer, Subject: sum.SubjectAlternativeName}
	return nil
}

func publicKeyEqual(cert *x509.Certificate, kp *sign.EphemeralKeypair) bool {
	k, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(kp.GetPublicKey())
}

// fixedCert hands sign.Bundle the certificate the signer already holds:
// one Fulcio request per run, not per skill.
type fixedCert []byte

func (c fixedCert) GetCertificate(context.Context, sign.Keypair, *sign.CertificateProviderOptions) ([]byte, error) {
	return c, nil
}

// Sign returns the JSON of a Sigstore bundle (v0.3) whose DSSE envelope
// holds the in-toto statement over set, with the Fulcio certificate and
// the Rekor entry (its inclusion proof and signed entry timestamp).
func (s *KeylessSigner) Sign(set *Set) ([]byte, error) {
	st, err := set.Statement()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Until(s.notAfter) < renewBefore {
		if err := s.renew(ctx); err != nil {
			return nil, err
		}
	}
	b, err := sign.Bundle(&sign.DSSEData{Data: st, PayloadType: PayloadType}, s.kp, sign.BundleOptions{
		CertificateProvider:        fixedCert(s.cert),
		CertificateProviderOptions: &sign.CertificateProviderOptions{},
		TransparencyLogs:           []sign.Transparency{s.rekor},
		Context:                    ctx,
	})
	if err != nil {
		return nil, s.rekorError(err)
	}
	pb, err := bundle.NewBundle(b)
	if err != nil {
		return nil, err
	}
	return pb.MarshalJSON()
}

// fulcioError turns sigstore-go's Fulcio error into one line naming the
// service, the cause and the fix.
func (s *KeylessSigner) fulcioError(err error) error {
	where := "keyless: Fulcio at " + s.opts.FulcioURL
	if msg := unreachable(err, "--fulcio-url", s.opts.Timeout); msg != "" {
		return fmt.Errorf("%s: %s", where, msg)
	}
	rest, ok := strings.CutPrefix(err.Error(), "Fulcio returned ")
	if !ok {
		return fmt.Errorf("%s: %s", where, oneLine(err.Error()))
	}
	code, body, _ := strings.Cut(rest, ": ")
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(body), &e) == nil && e.Message != "" {
		body = e.Message
	}
	said := fmt.Sprintf("%s refused the certificate request (HTTP %s: %s)", where, code, oneLine(body))
	if code != "401" && code != "403" && code != "400" {
		return fmt.Errorf("%s; try again later, or check --fulcio-url", said)
	}
	switch {
	case s.claims.expired(time.Now()) != "":
		return fmt.Errorf("%s: %s", said, s.claims.expired(time.Now()))
	case !slices.Contains(s.claims.Audience, FulcioAudience):
		return fmt.Errorf("%s: the ID token's audience is %q, not %q; request the token for audience %s", said, strings.Join(s.claims.Audience, ","), FulcioAudience, FulcioAudience)
	}
	return fmt.Errorf("%s: check that Fulcio accepts tokens of the issuer %s (subject %s)", said, s.claims.Issuer, s.claims.Subject)
}

// rekorError explains a failure of the log (or of assembling the bundle).
func (s *KeylessSigner) rekorError(err error) error {
	where := "keyless: Rekor at " + s.opts.RekorURL
	if msg := unreachable(err, "--rekor-url", s.opts.Timeout); msg != "" {
		return fmt.Errorf("%s: %s", where, msg)
	}
	var bad *entries.CreateLogEntryBadRequest
	if errors.As(err, &bad) && bad.Payload != nil {
		return fmt.Errorf("%s refused the entry (HTTP 400: %s)", where, oneLine(bad.Payload.Message))
	}
	var def *entries.CreateLogEntryDefault
	if errors.As(err, &def) {
		msg := ""
		if def.Payload != nil {
			msg = def.Payload.Message
		}
		return fmt.Errorf("%s failed (HTTP %d: %s); try again later, or check --rekor-url", where, def.Code(), oneLine(msg))
	}
	return fmt.Errorf("%s: %s", where, oneLine(err.Error()))
}

// unreachable explains a network failure, "" for another error.
func unreachable(err error, flag string, timeout time.Duration) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %s; check %s and the network, or raise --sigstore-timeout", timeout, flag)
	case errors.As(err, new(*net.OpError)), errors.As(err, new(*net.DNSError)):
		return fmt.Sprintf("cannot connect (%s); check %s and the network", oneLine(err.Error()), flag)
	}
	return ""
}

// oneLine folds a server's text into one bounded line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
