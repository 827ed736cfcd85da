// Package oidctest runs a real OpenID provider on loopback for tests of
// the resource server and, later, of the host's OAuth client.
package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
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
	mu       sync.Mutex
	keys     []*opKey // the last one signs
	clients  map[string]*opClient
	tokens   map[string]*issued // by token id, for introspection
	audience string             // of the tokens the native client gets
	ttl      time.Duration      // of those tokens; 0 for the storage's 5 minutes
	cli      op.Client
}

// issued is what the provider remembers of an access token.
type issued struct {
	subject string
	aud     []string
	scopes  []string
	exp     time.Time
}

// cliClient is the provider's native (public, PKCE) client for the host:
// a loopback redirect at any port, refresh tokens, JWT access tokens.
type cliClient struct{ op.Client }

func (c cliClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (c cliClient) IsScopeAllowed(string) bool          { return true }

func (s *opStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if id == CLIClient {
		return s.cli, nil
	}
	return s.Storage.GetClientByClientID(ctx, id)
}

// audRequest gives the native client's tokens the resource's audience
// (the example storage names the client instead).
type audRequest struct {
	*storage.AuthRequest
	aud string
}

func (r audRequest) GetAudience() []string { return []string{r.aud} }

func (s *opStorage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if ar, ok := r.(*storage.AuthRequest); ok && err == nil && ar.ApplicationID == CLIClient {
		return audRequest{ar, s.audience}, nil
	}
	return r, err
}

func (s *opStorage) TokenRequestByRefreshToken(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	r, err := s.Storage.TokenRequestByRefreshToken(ctx, token)
	if rr, ok := r.(*storage.RefreshTokenRequest); ok && err == nil && rr.ApplicationID == CLIClient {
		rr.Audience = []string{s.audience}
	}
	return r, err
}

func (s *opStorage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	if ar, ok := req.(audRequest); ok {
		req = ar.AuthRequest
	}
	id, refresh, exp, err := s.Storage.CreateAccessAndRefreshTokens(ctx, req, current)
	s.mu.Lock()
	if s.ttl != 0 {
		exp = time.Now().Add(s.ttl)
	}
	s.mu.Unlock()
	return id, refresh, exp, err
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
//   - "just-expired": tokens that expired 10 s before they were issued,
//     within a resource server's usual 30 s leeway;
//   - "other": tokens for the audience https://elsewhere.test/mcp;
//   - "opaque": group "ops", the audience given to [Start], opaque tokens;
//   - "rs": the resource server, which may call the introspection
//     endpoint (/oauth/introspect, in the metadata).
//
// Access tokens are JWTs carrying "scope" and "groups", except those of
// "opaque", which only introspection explains. There is also the native
// client [CLIClient] for the authorization code grant with PKCE and refresh
// tokens, whose user signs in on the provider's login form as [User] with
// [Password].
type OP struct {
	URL   string
	store *opStorage

	mu        sync.Mutex
	resources map[string][]string // the RFC 8707 resource parameters seen, by endpoint path
}

// The native client and its user.
const (
	CLIClient = "skillport-cli"
	Password  = "verysecure"
)

// UserSubject is the subject ("sub") of the tokens [User] signs in for
// (the id zitadel's example user store gives the user).
const UserSubject = "id1"

// User is the user name to sign in with.
func (o *OP) User() string {
	u, _ := url.Parse(o.URL)
	return "test-user@" + u.Hostname()
}

// SetAccessTTL sets the lifetime of the native client's access tokens
// issued from now on.
func (o *OP) SetAccessTTL(d time.Duration) {
	o.store.mu.Lock()
	o.store.ttl = d
	o.store.mu.Unlock()
}

// Resources returns the resource parameters (RFC 8707) the provider
// received at path ("/authorize", "/oauth/token"), in order.
func (o *OP) Resources(path string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.resources[path]...)
}

// Browser is what a person does in the browser: it opens the
// authorization URL, signs in on the provider's login form, and follows
// the redirects back to the client's loopback listener.
func (o *OP) Browser(t testing.TB) func(string) error {
	return func(authURL string) error {
		_, err := o.signIn(authURL, false)
		return err
	}
}

// RemoteBrowser is a browser on another machine: it signs in like
// Browser, but cannot load the client's loopback redirect; it returns
// that URL, which the person then copies from the address bar.
func (o *OP) RemoteBrowser(t testing.TB) func(string) (string, error) {
	return func(authURL string) (string, error) { return o.signIn(authURL, true) }
}

func (o *OP) signIn(authURL string, remote bool) (string, error) {
	var redirect string
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	if remote {
		op, _ := url.Parse(o.URL)
		c.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
			if r.URL.Host != op.Host {
				redirect = r.URL.String()
				return http.ErrUseLastResponse
			}
			return nil
		}
	}
	resp, err := c.Get(authURL)
	if err != nil {
		return "", err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(body)
	if m == nil {
		return "", fmt.Errorf("no login form at %s: %s %s", resp.Request.URL, resp.Status, body)
	}
	resp, err = c.PostForm(o.URL+"/login/username", url.Values{"id": {string(m[1])}, "username": {o.User()}, "password": {Password}})
	if err != nil {
		return "", err
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if remote {
		if redirect == "" {
			return "", fmt.Errorf("sign-in ended at %s without a redirect to the client: %s %s", resp.Request.URL, resp.Status, body)
		}
		return redirect, nil
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("sign-in ended at %s: %s %s", resp.Request.URL, resp.Status, body)
	}
	return "", nil
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
		Storage:  storage.NewStorage(storage.NewUserStore(srv.URL)),
		audience: audience,
		cli:      cliClient{storage.NativeClient(CLIClient, "http://127.0.0.1/callback")},
		clients: map[string]*opClient{
			"alice":        mk("alice", audience, 0, "ops"),
			"bob":          mk("bob", audience, 0, "sales"),
			"expired":      mk("expired", audience, -time.Hour),
			"just-expired": mk("just-expired", audience, -10*time.Second),
			"other":        mk("other", "https://elsewhere.test/mcp", 0),
			"rs":           mk("rs", audience, 0),
		},
		tokens: map[string]*issued{},
	}
	opaque := mk("opaque", audience, 0, "ops")
	opaque.opaque = true
	st.clients["opaque"] = opaque
	st.rotate(t)
	var key [32]byte
	rand.Read(key[:])
	p, err := op.NewProvider(&op.Config{CryptoKey: key, CodeMethodS256: true, AuthMethodPost: true, GrantTypeRefreshToken: true}, st, op.StaticIssuer(srv.URL), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	o := &OP{URL: srv.URL, store: st, resources: map[string][]string{}}
	// The login form is the embedder's part of an OpenID provider.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/username", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form method="POST" action="/login/username"><input type="hidden" name="id" value="%s"><input name="username"><input name="password" type="password"></form>`, html.EscapeString(r.FormValue("authRequestID")))
	})
	mux.HandleFunc("POST /login/username", func(w http.ResponseWriter, r *http.Request) {
		id := r.FormValue("id")
		if err := st.CheckUsernamePassword(r.FormValue("username"), r.FormValue("password"), id); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, op.AuthCallbackURL(p)(r.Context(), id), http.StatusFound)
	})
	mux.Handle("/", p)
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/authorize" || r.URL.Path == "/oauth/token" {
			if err := r.ParseForm(); err == nil {
				if res, ok := r.Form["resource"]; ok {
					o.mu.Lock()
					o.resources[r.URL.Path] = append(o.resources[r.URL.Path], res...)
					o.mu.Unlock()
				}
			}
		}
		mux.ServeHTTP(w, r)
	})
	return o
}

// Sign returns a JWT of claims signed with the provider's current key,
// its protected header carrying extra as well: for tokens the provider
// would not issue itself (a "crit" header, say).
func (o *OP) Sign(t testing.TB, extra map[string]any, claims map[string]any) string {
	t.Helper()
	k, err := o.store.SigningKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	opts := (&jose.SignerOptions{}).WithType("JWT")
	for name, v := range extra {
		opts = opts.WithHeader(jose.HeaderKey(name), v)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.Key(), KeyID: k.ID()}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
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
