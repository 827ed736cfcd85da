// Package oidctest runs a real OpenID provider on loopback for tests of
// the resource server and, later, of the host's OAuth client.
package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// opKey is one signing key of the test OpenID provider.
type opKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *opKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *opKey) Key() any                                    { return k.key }
func (k *opKey) ID() string                                  { return k.id }

type opPublicKey struct{ *opKey }

func (k opPublicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k opPublicKey) Use() string                        { return "sig" }
func (k opPublicKey) Key() any                           { return &k.key.PublicKey }

// opClient is a machine client of the test provider (client credentials),
// issued JWT access tokens.
type opClient struct {
	op.Client
	id     string
	secret string
	aud    string        // the token's audience
	ttl    time.Duration // negative for tokens that are already expired
	groups []string
	opaque bool // issued opaque access tokens, checked by introspection
}

func (c *opClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (c *opClient) GetID() string { return c.id }
func (c *opClient) AccessTokenType() op.AccessTokenType {
	if c.opaque {
		return op.AccessTokenTypeBearer
	}
	return op.AccessTokenTypeJWT
}
func (c *opClient) IsScopeAllowed(string) bool { return true }
func (c *opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// opStorage is zitadel's example storage, with machine clients, rotating
// signing keys and the scope and groups claims in access tokens.
type opStorage struct {
	*storage.Storage
	mu      sync.Mutex
	keys    []*opKey // the last one signs
	clients map[string]*opClient
	tokens  map[string]*issued // by token id, for introspection
}

// issued is what the provider remembers of an access token.
type issued struct {
	subject string
	aud     []string
	scopes  []string
	exp     time.Time
}

func (s *opStorage) rotate(t testing.TB) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, &opKey{id: fmt.Sprintf("key-%d", len(s.keys)+1), key: k})
}

func (s *opStorage) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1], nil
}

func (s *opStorage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *opStorage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ks []op.Key
	for _, k := range s.keys {
		ks = append(ks, opPublicKey{k})
	}
	return ks, nil
}

func (s *opStorage) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	c := s.clients[id]
	if c == nil || c.secret != secret {
		return nil, fmt.Errorf("wrong client or secret")
	}
	return c, nil
}

func (s *opStorage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	c := s.clients[id]
	if c == nil {
		return nil, fmt.Errorf("no client %q", id)
	}
	return &oidc.JWTTokenRequest{Subject: id, Audience: []string{c.aud}, Scopes: scopes}, nil
}

func (s *opStorage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	ttl := 5 * time.Minute
	if c := s.clients[req.GetSubject()]; c != nil && c.ttl != 0 {
		ttl = c.ttl
	}
	id, exp := rand.Text(), time.Now().Add(ttl)
	s.mu.Lock()
	s.tokens[id] = &issued{subject: req.GetSubject(), aud: req.GetAudience(), scopes: req.GetScopes(), exp: exp}
	s.mu.Unlock()
	return id, exp, nil
}

// AuthorizeClientIDSecret authenticates the machine clients, such as the
// resource server calling the introspection endpoint.
func (s *opStorage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	if c := s.clients[id]; c == nil || c.secret != secret {
		return fmt.Errorf("wrong client or secret")
	}
	return nil
}

// SetIntrospectionFromToken answers the resource server "rs" (only) about
// a token: subject, audience, scope, expiry and groups (RFC 7662).
func (s *opStorage) SetIntrospectionFromToken(_ context.Context, r *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	if clientID != "rs" {
		return fmt.Errorf("client %q may not introspect", clientID)
	}
	s.mu.Lock()
	tok := s.tokens[tokenID]
	s.mu.Unlock()
	if tok == nil || tok.subject != subject || time.Now().After(tok.exp) {
		return fmt.Errorf("token is not active")
	}
	r.Subject, r.Audience, r.Scope = tok.subject, tok.aud, tok.scopes
	r.Expiration, r.ClientID = oidc.FromTime(tok.exp), tok.subject
	if c := s.clients[tok.subject]; c != nil && c.groups != nil {
		r.Claims = map[string]any{"groups": c.groups}
	}
	return nil
}

func (s *opStorage) GetPrivateClaimsFromScopes(_ context.Context, _, clientID string, scopes []string) (map[string]any, error) {
	claims := map[string]any{"scope": strings.Join(scopes, " ")}
	if c := s.clients[clientID]; c != nil && c.groups != nil {
		claims["groups"] = c.groups
	}
	return claims, nil
}

// OP is a real OpenID provider, zitadel/oidc's, on loopback, with the
// machine clients (client credentials grant, secret "secret"):
//
//   - "alice": group "ops", audience the one given to [Start];
//   - "bob": group "sales", same audience;
//   - "expired": tokens that expired an hour before they were issued;
//   - "other": tokens for the audience https://elsewhere.test/mcp;
//   - "opaque": group "ops", the audience given to [Start], opaque tokens;
//   - "rs": the resource server, which may call the introspection
//     endpoint (/oauth/introspect, in the metadata).
//
// Access tokens are JWTs carrying "scope" and "groups", except those of
// "opaque", which only introspection explains.
type OP struct {
	URL   string
	store *opStorage
}

// Rotate adds a new signing key, used from now on; the old one stays
// published.
func (o *OP) Rotate(t testing.TB) { o.store.rotate(t) }

func Start(t testing.TB, audience string) *OP {
	t.Helper()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	base := op.Client(storage.WebClient("base", "secret"))
	mk := func(id, aud string, ttl time.Duration, groups ...string) *opClient {
		return &opClient{Client: base, id: id, secret: "secret", aud: aud, ttl: ttl, groups: groups}
	}
	st := &opStorage{
		Storage: storage.NewStorage(storage.NewUserStore(srv.URL)),
		clients: map[string]*opClient{
			"alice":   mk("alice", audience, 0, "ops"),
			"bob":     mk("bob", audience, 0, "sales"),
			"expired": mk("expired", audience, -time.Hour),
			"other":   mk("other", "https://elsewhere.test/mcp", 0),
			"rs":      mk("rs", audience, 0),
		},
		tokens: map[string]*issued{},
	}
	opaque := mk("opaque", audience, 0, "ops")
	opaque.opaque = true
	st.clients["opaque"] = opaque
	st.rotate(t)
	var key [32]byte
	rand.Read(key[:])
	p, err := op.NewProvider(&op.Config{CryptoKey: key, CodeMethodS256: true, AuthMethodPost: true}, st, op.StaticIssuer(srv.URL), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	h = p
	return &OP{URL: srv.URL, store: st}
}

// Token gets an access token for client with scopes from the provider's
// token endpoint.
func (o *OP) Token(t testing.TB, client string, scopes ...string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {client}, "client_secret": {"secret"}, "scope": {strings.Join(scopes, " ")}}
	resp, err := http.PostForm(o.URL+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &tr) != nil || tr.AccessToken == "" {
		t.Fatalf("token for %s: %s %s", client, resp.Status, body)
	}
	return tr.AccessToken
}
