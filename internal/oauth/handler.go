// Package oauth signs the host in to MCP servers that require OAuth (the
// MCP authorization specification: OAuth 2.1, the server a resource
// server). It discovers the server's authorization server from its 401
// (RFC 9728, then RFC 8414 or OpenID Connect Discovery), obtains tokens
// with the authorization code grant and PKCE through a loopback redirect
// and the user's browser, or with the client credentials grant for
// machines, keeps them in a 0600 file in the user's configuration
// directory, and refreshes them.
//
// A [Handler] is the go-sdk's auth.OAuthHandler for one server: set it as
// mcp.StreamableClientTransport.OAuthHandler (host.Origin.OAuth) and every
// request carries the token, and a 401 is answered once by a refresh (or
// a new client credentials token) and a retry. Only an interactive Handler
// (the user ran "sign in") opens a browser; any other says which command
// to run instead.
//
// The OAuth pieces are go-sdk's (auth, oauthex: metadata, dynamic client
// registration, client ID metadata documents, the authorization code
// flow) and golang.org/x/oauth2's (PKCE, exchange, refresh, client
// credentials); this package adds the loopback redirect, the browser, the
// token store and the policy of when to ask the user.
package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/skillport/skillport/internal/mcphttp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Defaults.
const (
	// DefaultTimeout bounds each request to a metadata, registration or
	// token endpoint.
	DefaultTimeout = 30 * time.Second
	// DefaultLoginTimeout bounds the wait for the browser's redirect.
	DefaultLoginTimeout = 5 * time.Minute
)

// Options configures a Handler.
type Options struct {
	// Store keeps the tokens; nil keeps them in memory only.
	Store *Store
	// HTTPClient makes the requests to metadata, registration and token
	// endpoints; default a client with a DefaultTimeout timeout.
	HTTPClient *http.Client

	// ClientID is a client pre-registered with the authorization server.
	// ClientSecret is its secret, if it is confidential (read it from an
	// environment variable or a file, never from a command line).
	ClientID     string
	ClientSecret string
	// ClientCredentials obtains tokens with the client credentials grant
	// (a machine, no user): ClientID and ClientSecret are required.
	ClientCredentials bool
	// ClientMetadataURL is an https URL of a Client ID Metadata Document
	// describing this client, used as the client id where the
	// authorization server advertises client_id_metadata_document_supported.
	ClientMetadataURL string
	// Scopes are requested in addition to those the server asks for.
	Scopes []string

	// Fresh ignores the stored token until the handler has obtained a new
	// one: signing in again replaces a token rather than reusing it.
	Fresh bool
	// Interactive lets a 401 start the authorization code flow in the
	// browser. Without it, a 401 that a refresh cannot answer is a
	// *LoginRequiredError.
	Interactive bool
	// NoBrowser prints the authorization URL instead of opening it.
	NoBrowser bool
	// Paste, if set, is read for the redirected URL pasted by hand when the
	// browser runs on another machine (no browser was opened here): the
	// terminal's standard input.
	Paste io.Reader
	// Browser opens a URL; default OpenBrowser.
	Browser func(url string) error
	// Stderr receives the authorization URL and progress; default os.Stderr.
	Stderr io.Writer
	// LoginTimeout bounds the wait for the browser; default
	// DefaultLoginTimeout.
	LoginTimeout time.Duration
	// LoginCommand is the command that signs in to a server, for
	// *LoginRequiredError; default "skillport auth login URL".
	LoginCommand func(server string) string
	// LoginScopes is the command that signs in with more scopes, for a
	// 403 insufficient_scope; default "skillport auth login --scope S ... URL".
	LoginScopes func(server string, scopes []string) string
}

// LoginRequiredError is returned for a server that wants a token the
// handler cannot obtain without the user.
type LoginRequiredError struct {
	Server  string
	Reason  string
	Command string // what the user runs to sign in
}

func (e *LoginRequiredError) Error() string {
	return fmt.Sprintf("%s requires signing in (%s); run: %s", e.Server, e.Reason, e.Command)
}

// Handler is the auth.OAuthHandler of one server.
type Handler struct {
	server string
	opts   Options
	client *http.Client

	mu         sync.Mutex // serializes Authorize
	tsMu       sync.Mutex
	ts         oauth2.TokenSource
	mem        *Token // the token when there is no Store
	fresh      string // the access token the last refresh-after-401 obtained
	authorized bool   // Authorize obtained a token
	none       bool   // the store had no token for the server when last read
}

var _ auth.OAuthHandler = (*Handler)(nil)

// New returns the handler for the MCP server at serverURL.
func New(serverURL string, opts *Options) (*Handler, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q is not an http(s) URL", serverURL)
	}
	h := &Handler{server: serverURL}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.ClientCredentials && (h.opts.ClientID == "" || h.opts.ClientSecret == "") {
		return nil, errors.New("the client credentials grant needs a client id and its secret")
	}
	if h.opts.ClientMetadataURL != "" {
		cu, err := url.Parse(h.opts.ClientMetadataURL)
		if err != nil || cu.Scheme != "https" || cu.Path == "" || cu.Path == "/" {
			return nil, fmt.Errorf("client metadata URL %q must be an https URL with a path", h.opts.ClientMetadataURL)
		}
	}
	// Tokens, secrets and codes go through this client: never across
	// origins on a redirect, whoever built it.
	h.client = mcphttp.Guard(h.opts.HTTPClient, DefaultTimeout)
	if h.opts.Stderr == nil {
		h.opts.Stderr = os.Stderr
	}
	if h.opts.Browser == nil {
		h.opts.Browser = OpenBrowser
	}
	if h.opts.LoginTimeout <= 0 {
		h.opts.LoginTimeout = DefaultLoginTimeout
	}
	if h.opts.LoginCommand == nil {
		h.opts.LoginCommand = func(s string) string { return "skillport auth login " + s }
		if h.opts.LoginScopes == nil {
			h.opts.LoginScopes = func(s string, scopes []string) string {
				return "skillport auth login --scope " + strings.Join(scopes, " --scope ") + " " + s
			}
		}
	}
	return h, nil
}

// Authorized reports whether the handler obtained a token (a refresh, a
// client credentials token or a sign-in) since it was made.
func (h *Handler) Authorized() bool {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	return h.authorized
}

// Server is the URL the handler signs in to.
func (h *Handler) Server() string { return h.server }

func (h *Handler) load() (*Token, error) {
	if h.opts.Store == nil {
		return h.mem, nil
	}
	return h.opts.Store.Get(h.server)
}

func (h *Handler) save(t *Token) error {
	if h.opts.Store == nil {
		c := *t
		h.mem = &c
		return nil
	}
	return h.opts.Store.Put(t)
}

// Token returns the stored token, refreshed if it has expired and can be;
// nil if there is none.
func (h *Handler) Token(ctx context.Context) (*oauth2.Token, error) {
	ts, err := h.TokenSource(ctx)
	if err != nil || ts == nil {
		return nil, err
	}
	return ts.Token()
}

// TokenSource implements auth.OAuthHandler: the stored token, refreshed
// before it expires (a rotated refresh token is saved before it is used).
// With no token it returns nil, so the request goes without one and its
// 401 reaches Authorize.
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	if h.ts != nil {
		return h.ts, nil
	}
	if (h.opts.Fresh && !h.authorized) || h.none {
		return nil, nil
	}
	t, err := h.load()
	if err != nil || t == nil {
		// No token, or a tokens file that cannot be used: the requests go
		// without one (and the file is not read for each). A server that
		// needs one answers 401, and Authorize reads the file again, and
		// reports its problem; a public server is unaffected.
		h.none = true
		return nil, nil
	}
	h.ts = h.source(t)
	return h.ts, nil
}

// reset drops the token source, so that the next request reads the
// store; obtained reports a new token.
func (h *Handler) reset(obtained bool) {
	h.tsMu.Lock()
	h.ts, h.none = nil, false
	h.authorized = h.authorized || obtained
	h.tsMu.Unlock()
}

// oauthContext is the context of token requests: the handler's client,
// which adds the RFC 8707 resource parameter to refreshes.
func (h *Handler) oauthContext(ctx context.Context, t *Token) context.Context {
	c := h.client
	if t != nil && t.ProtectedResource != "" {
		cc := *c
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		cc.Transport = &resourceParam{tokenURL: t.TokenURL, resource: t.ProtectedResource, next: next}
		c = &cc
	}
	return context.WithValue(ctx, oauth2.HTTPClient, c)
}

func (h *Handler) source(t *Token) oauth2.TokenSource {
	rec := *t
	return &savingSource{h: h, rec: &rec, base: rec.config().TokenSource(h.oauthContext(context.Background(), &rec), rec.oauth2())}
}

// savingSource saves every new token it obtains.
type savingSource struct {
	h    *Handler
	mu   sync.Mutex
	rec  *Token
	base oauth2.TokenSource
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec.RefreshToken == "" && !s.rec.oauth2().Valid() {
		// Nothing to refresh with: send no token, and let the 401 reach
		// Authorize (a new client credentials token, or the login hint).
		return nil, nil
	}
	t, err := s.base.Token()
	if err != nil {
		return nil, fmt.Errorf("refreshing the token for %s at %s: %w", s.h.server, s.rec.TokenURL, err)
	}
	if t.AccessToken != s.rec.AccessToken {
		s.rec.AccessToken, s.rec.Expiry, s.rec.TokenType = t.AccessToken, t.Expiry, t.TokenType
		if t.RefreshToken != "" {
			s.rec.RefreshToken = t.RefreshToken
		}
		if err := s.h.save(s.rec); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Authorize implements auth.OAuthHandler: it answers a 401 (or a 403
// insufficient_scope) once, by refreshing the token, by a new client
// credentials token, or (interactive handlers only) by signing in again.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, err := ParseChallenge(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return fmt.Errorf("%s answered %s with a bad challenge: %w", h.server, resp.Status, err)
	}
	if resp.StatusCode == http.StatusForbidden && ch.Error != "insufficient_scope" {
		return fmt.Errorf("%s refused the request: %s %s", h.server, resp.Status, ch.ErrorDescription)
	}
	sent, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	moved := ""
	if resp.StatusCode == http.StatusUnauthorized && !(h.opts.Fresh && !h.Authorized()) {
		// A token of another authorization server is not refreshed there:
		// when the server's metadata names a new one, the client registers
		// and signs in with it anew.
		if moved, err = h.issuerMoved(ctx, ch); err != nil {
			return err
		}
		if moved == "" {
			if done, err := h.refreshAfter401(sent); done || err != nil {
				return err
			}
		}
	}
	switch {
	case h.opts.ClientCredentials:
		return h.clientCredentials(ctx, ch)
	case h.opts.Interactive:
		return h.authorizationCode(ctx, req, resp, ch)
	}
	reason := "no token stored"
	switch {
	case moved != "":
		reason = moved
	case resp.StatusCode == http.StatusForbidden:
		reason = "the token lacks scope " + strings.Join(ch.Scopes, " ")
	case sent != "":
		reason = "the stored token was refused and cannot be refreshed"
	}
	cmd := h.opts.LoginCommand(h.server)
	if resp.StatusCode == http.StatusForbidden && len(ch.Scopes) > 0 && h.opts.LoginScopes != nil {
		cmd = h.opts.LoginScopes(h.server, ch.Scopes)
	}
	return &LoginRequiredError{Server: h.server, Reason: reason, Command: cmd}
}

// issuerMoved says how the server's authorization server changed since
// the stored token was issued, or "".
func (h *Handler) issuerMoved(ctx context.Context, ch *Challenge) (string, error) {
	t, err := h.load()
	if err != nil || t == nil || t.Issuer == "" {
		return "", err
	}
	d, err := Discover(ctx, h.client, h.server, ch)
	if err != nil {
		return "", err
	}
	if d.AuthServer.Issuer != t.Issuer {
		return fmt.Sprintf("its authorization server changed from %s to %s", t.Issuer, d.AuthServer.Issuer), nil
	}
	return "", nil
}

// refreshAfter401 refreshes a refused token once; done reports a new
// token to retry with.
func (h *Handler) refreshAfter401(sent string) (done bool, err error) {
	t, err := h.load()
	if err != nil {
		return false, err
	}
	if t == nil {
		return false, nil
	}
	if sent != t.AccessToken && t.oauth2().Valid() {
		// The request went without the stored token, or with an older
		// one (another command refreshed it): retry with it.
		h.reset(false)
		return true, nil
	}
	if t.RefreshToken == "" || (sent != "" && sent == h.fresh) {
		return false, nil
	}
	expired := *t.oauth2()
	expired.AccessToken, expired.Expiry = "", time.Unix(1, 0)
	nt, err := t.config().TokenSource(h.oauthContext(context.Background(), t), &expired).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			return false, nil // the refresh token is gone too: sign in again
		}
		return false, fmt.Errorf("refreshing the token for %s at %s: %w", h.server, t.TokenURL, err)
	}
	t.AccessToken, t.Expiry, t.TokenType = nt.AccessToken, nt.Expiry, nt.TokenType
	if nt.RefreshToken != "" {
		t.RefreshToken = nt.RefreshToken
	}
	if err := h.save(t); err != nil {
		return false, err
	}
	h.fresh = nt.AccessToken
	h.reset(true)
	return true, nil
}

func (h *Handler) scopes(ch *Challenge, d *Discovery) []string {
	s := ch.Scopes
	if len(s) == 0 && d != nil {
		s = d.Resource.ScopesSupported
	}
	for _, x := range h.opts.Scopes {
		if !slices.Contains(s, x) {
			s = append(slices.Clip(s), x)
		}
	}
	return s
}

func (h *Handler) clientCredentials(ctx context.Context, ch *Challenge) error {
	d, err := Discover(ctx, h.client, h.server, ch)
	if err != nil {
		return err
	}
	cc := &clientcredentials.Config{
		ClientID:       h.opts.ClientID,
		ClientSecret:   h.opts.ClientSecret,
		TokenURL:       d.AuthServer.TokenEndpoint,
		Scopes:         h.scopes(ch, d),
		EndpointParams: url.Values{"resource": {d.Resource.Resource}},
		AuthStyle:      authStyle(d.AuthServer.TokenEndpointAuthMethodsSupported),
	}
	tok, err := cc.Token(context.WithValue(ctx, oauth2.HTTPClient, h.client))
	if err != nil {
		return fmt.Errorf("client credentials token for %s from %s: %w", h.server, cc.TokenURL, err)
	}
	t := &Token{
		Resource: h.server, ProtectedResource: d.Resource.Resource, Issuer: d.AuthServer.Issuer,
		TokenURL: cc.TokenURL, ClientID: cc.ClientID, AuthStyle: cc.AuthStyle, Grant: GrantClientCredentials,
		Scopes: cc.Scopes, AccessToken: tok.AccessToken, TokenType: tok.TokenType, Expiry: tok.Expiry,
	}
	if err := h.save(t); err != nil {
		return err
	}
	h.reset(true)
	return nil
}

// authStyle picks how the client authenticates at the token endpoint,
// from what the authorization server supports (OAuth 2.1 prefers the
// secret in the form).
func authStyle(supported []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

func (h *Handler) authorizationCode(ctx context.Context, req *http.Request, resp *http.Response, ch *Challenge) error {
	d, err := Discover(ctx, h.client, h.server, ch)
	if err != nil {
		return err
	}
	lb, err := newLoopback()
	if err != nil {
		return err
	}
	defer lb.close()
	var got struct {
		cfg *oauth2.Config
		tok *oauth2.Token
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         lb.url,
		Client:              h.client,
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if u, err := url.Parse(args.URL); err == nil {
				lb.expect(u.Query().Get("state"))
			}
			fmt.Fprintf(h.opts.Stderr, "To sign in to %s, open this URL in a browser:\n\n  %s\n\n", h.server, args.URL)
			opened := false
			if !h.opts.NoBrowser {
				if err := h.opts.Browser(args.URL); err != nil {
					fmt.Fprintf(h.opts.Stderr, "(no browser opened: %v)\n", err)
				} else {
					opened = true
				}
			}
			fmt.Fprintf(h.opts.Stderr, "Waiting up to %s for the browser to return to %s ...\n", h.opts.LoginTimeout, lb.url)
			if !opened && h.opts.Paste != nil {
				fmt.Fprintf(h.opts.Stderr, "If the browser runs on another machine, it cannot reach that address: paste here the URL of the page it fails to load.\n")
				go lb.readPasted(h.opts.Paste, h.opts.Stderr)
			}
			return lb.wait(ctx, h.opts.LoginTimeout)
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			got.cfg, got.tok = c, t
			return c.TokenSource(ctx, t), nil
		},
	}
	if len(h.opts.Scopes) > 0 {
		cfg.ScopeFilter = func(s []string) []string { return h.scopes(&Challenge{Scopes: s}, nil) }
	}
	if h.opts.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.opts.ClientMetadataURL}
	}
	if h.opts.ClientID != "" {
		pc := &oauthex.ClientCredentials{ClientID: h.opts.ClientID}
		if h.opts.ClientSecret != "" {
			pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.opts.ClientSecret}
		}
		cfg.PreregisteredClient = pc
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:              "skillport",
			RedirectURIs:            []string{lb.url},
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}}
		if d.AuthServer.RegistrationEndpoint == "" && !(h.opts.ClientMetadataURL != "" && d.AuthServer.ClientIDMetadataDocumentSupported) {
			return fmt.Errorf("authorization server %s offers no dynamic client registration; give the client id registered for skillport (--client-id)", d.AuthServer.Issuer)
		}
	}
	sdk, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return err
	}
	if err := sdk.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("signing in to %s at %s: %w", h.server, d.AuthServer.Issuer, err)
	}
	if got.tok == nil {
		return fmt.Errorf("signing in to %s: no token", h.server)
	}
	t := &Token{
		Resource: h.server, ProtectedResource: d.Resource.Resource, Issuer: d.AuthServer.Issuer,
		TokenURL: got.cfg.Endpoint.TokenURL, ClientID: got.cfg.ClientID, AuthStyle: got.cfg.Endpoint.AuthStyle,
		Grant: GrantAuthorizationCode, Scopes: got.cfg.Scopes,
		AccessToken: got.tok.AccessToken, TokenType: got.tok.TokenType, RefreshToken: got.tok.RefreshToken, Expiry: got.tok.Expiry,
	}
	if h.opts.ClientID == "" {
		t.ClientSecret = got.cfg.ClientSecret // issued by registration
	}
	if err := h.save(t); err != nil {
		return err
	}
	h.fresh = t.AccessToken
	h.reset(true)
	return nil
}

// MaxTokenRequestBytes bounds the form of a token request the resource
// parameter is added to.
const MaxTokenRequestBytes = 64 << 10

// resourceParam adds the RFC 8707 resource parameter to refresh requests
// sent to the token endpoint (golang.org/x/oauth2 has no option for it).
type resourceParam struct {
	tokenURL, resource string
	next               http.RoundTripper
}

func (p *resourceParam) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.URL.String() != p.tokenURL || r.Body == nil {
		return p.next.RoundTrip(r)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxTokenRequestBytes+1))
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	if len(body) > MaxTokenRequestBytes {
		return nil, fmt.Errorf("token request to %s is larger than %d bytes", p.tokenURL, MaxTokenRequestBytes)
	}
	form, err := url.ParseQuery(string(body))
	if err == nil && form.Get("resource") == "" {
		form.Set("resource", p.resource)
		body = []byte(form.Encode())
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return p.next.RoundTrip(r)
}
