package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/skillport/skillport/skillserver"
)

// AuthOptions configures an [Auth]: this server as an OAuth 2.1 resource
// server, as the MCP authorization specification asks.
type AuthOptions struct {
	// Issuer is the authorization server's issuer URL. Its metadata is
	// discovered at Issuer's RFC 8414 or OpenID discovery well-known path.
	Issuer string
	// Audience is this server's resource URI (RFC 8707), e.g.
	// https://skills.example.com/mcp: a token must name it in "aud".
	Audience string
	// Scopes a token must all grant; a token without one gets 403
	// insufficient_scope.
	Scopes []string
	// ClockSkew is the leeway for exp and nbf (default 30 s).
	ClockSkew time.Duration
	// HTTPClient fetches the metadata and keys and makes introspection
	// calls (default a client with a 10 s timeout).
	HTTPClient *http.Client
	// Introspection, when set, accepts opaque tokens by asking the
	// authorization server about them (RFC 7662). JWTs are still verified
	// locally.
	Introspection *Introspection
}

// Auth verifies bearer tokens: signed JWTs, whose keys come from the
// issuer's JWKS (cached, and fetched again when a token names a key id the
// cache does not have, so key rotation needs no restart), and, when
// configured, opaque tokens through introspection. A verified token is
// remembered until it expires (at most [MaxCachedTokens]), so a client
// reusing its token pays for verification once.
type Auth struct {
	opts          AuthOptions
	meta          *oauthex.AuthServerMeta
	keys          keyfunc.Keyfunc // nil when the issuer publishes no JWKS
	parser        *jwt.Parser
	prmURL        string
	hc            *http.Client
	introspectURL string // "" without introspection
	cache         tokenCache
}

// NewAuth discovers the issuer's metadata and keys. It fails, naming the
// URL, when the issuer cannot be reached or publishes no jwks_uri.
func NewAuth(ctx context.Context, opts AuthOptions) (*Auth, error) {
	if opts.Issuer == "" || opts.Audience == "" {
		return nil, errors.New("endpoint: auth needs both an issuer URL (--auth-issuer) and this server's resource URI (--auth-audience)")
	}
	aud, err := url.Parse(opts.Audience)
	if err != nil || aud.Scheme == "" || aud.Host == "" || aud.Fragment != "" {
		return nil, fmt.Errorf("endpoint: auth audience %q must be an absolute URI without fragment, the URL clients use for /mcp, e.g. https://skills.example.com/mcp", opts.Audience)
	}
	if opts.ClockSkew == 0 {
		opts.ClockSkew = 30 * time.Second
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	iss := strings.TrimSuffix(opts.Issuer, "/")
	var meta *oauthex.AuthServerMeta
	var tried []string
	for _, u := range discoveryURLs(iss) {
		tried = append(tried, u)
		m, err := issuerMetadata(ctx, hc, u, opts.Issuer)
		if err != nil {
			return nil, fmt.Errorf("endpoint: discovering the authorization server at %s: %w", u, err)
		}
		if m != nil {
			meta = m
			break
		}
	}
	if meta == nil {
		return nil, fmt.Errorf("endpoint: the issuer %s publishes no metadata (tried %s); check --auth-issuer", opts.Issuer, strings.Join(tried, ", "))
	}
	a := &Auth{opts: opts, meta: meta, hc: hc}
	if in := opts.Introspection; in != nil {
		if in.ClientID == "" || in.ClientSecret == "" {
			return nil, errors.New("endpoint: token introspection needs a client id and secret to call the introspection endpoint with")
		}
		a.introspectURL = in.URL
		if a.introspectURL == "" {
			a.introspectURL = meta.IntrospectionEndpoint
		}
		if a.introspectURL == "" {
			return nil, fmt.Errorf("endpoint: the issuer %s publishes no introspection_endpoint; give its URL (--auth-introspection-url)", opts.Issuer)
		}
		if u, err := url.Parse(a.introspectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("endpoint: introspection URL %q must be an absolute http(s) URL", a.introspectURL)
		}
	}
	switch {
	case meta.JWKSURI != "":
		keys, err := keyfunc.NewDefaultCtx(ctx, []string{meta.JWKSURI})
		if err != nil {
			return nil, fmt.Errorf("endpoint: fetching the issuer's keys from %s: %w", meta.JWKSURI, err)
		}
		a.keys = keys
	case a.introspectURL == "":
		return nil, fmt.Errorf("endpoint: the issuer %s publishes no jwks_uri, so its tokens cannot be verified; configure token introspection instead", opts.Issuer)
	}
	a.parser = jwt.NewParser(
		jwt.WithIssuer(meta.Issuer),
		jwt.WithAudience(opts.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(opts.ClockSkew),
		jwt.WithValidMethods([]string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}),
	)
	prm := *aud
	prm.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(aud.Path, "/")
	prm.RawQuery = ""
	a.prmURL = prm.String()
	return a, nil
}

// discoveryURLs are RFC 8414's and OpenID Connect's metadata locations for
// an issuer, in that order.
func discoveryURLs(iss string) []string {
	u, err := url.Parse(iss)
	if err != nil {
		return []string{iss + "/.well-known/openid-configuration"}
	}
	rfc := *u
	rfc.Path = "/.well-known/oauth-authorization-server" + u.Path
	return []string{rfc.String(), iss + "/.well-known/openid-configuration"}
}

// MetadataURL is where the Protected Resource Metadata is published.
func (a *Auth) MetadataURL() string { return a.prmURL }

// Metadata is this resource's RFC 9728 Protected Resource Metadata.
func (a *Auth) Metadata() *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               a.opts.Audience,
		AuthorizationServers:   []string{a.meta.Issuer},
		ScopesSupported:        slices.Clone(a.opts.Scopes),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "skillport",
	}
}

// Verify checks a bearer token: a JWT's signature by one of the issuer's
// keys, iss, aud, exp and nbf; an opaque token, with introspection, by
// asking the authorization server. A refused token's error wraps
// [auth.ErrInvalidToken]; any other error means the token could not be
// checked (the introspection endpoint is unreachable, say).
func (a *Auth) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	v, err := a.check(ctx, token)
	return v.ti, err
}

// check is Verify, remembering the result with its caller until the
// token expires.
func (a *Auth) check(ctx context.Context, token string) (verified, error) {
	now := time.Now()
	if v, ok := a.cache.get(token, now); ok {
		return v, nil
	}
	var ti *auth.TokenInfo
	var err error
	switch {
	case isJWT(token) && a.keys != nil:
		ti, err = a.verifyJWT(ctx, token)
	case a.introspectURL != "":
		ti, err = a.introspect(ctx, token)
	default:
		err = fmt.Errorf("%w: %v", auth.ErrInvalidToken, errOpaque)
	}
	if err != nil {
		return verified{}, err
	}
	v := verified{ti: ti, caller: skillserver.CallerFromToken(ti)}
	a.cache.put(token, v, now)
	return v, nil
}

// verifyJWT checks a JWT locally.
func (a *Auth) verifyJWT(ctx context.Context, token string) (*auth.TokenInfo, error) {
	claims := jwt.MapClaims{}
	keyfunc := a.keys.KeyfuncCtx(ctx)
	critical := func(t *jwt.Token) (any, error) {
		// RFC 7515 §4.1.11: a JWS whose header marks as critical an
		// extension the recipient does not understand is invalid; this
		// server understands none.
		if _, ok := t.Header["crit"]; ok {
			return nil, errCrit
		}
		return keyfunc(t)
	}
	if _, err := a.parser.ParseWithClaims(token, claims, critical); err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	ti := &auth.TokenInfo{Extra: map[string]any{}}
	ti.UserID, _ = claims.GetSubject()
	if exp, _ := claims.GetExpirationTime(); exp != nil {
		ti.Expiration = exp.Time
	}
	switch s := claims["scope"].(type) {
	case string:
		ti.Scopes = strings.Fields(s)
	case []any:
		for _, v := range s {
			if str, ok := v.(string); ok {
				ti.Scopes = append(ti.Scopes, str)
			}
		}
	}
	if g, ok := claims["groups"]; ok {
		ti.Extra["groups"] = g
	}
	return ti, nil
}

var errCrit = errors.New("its header lists critical extensions (crit) this server does not understand (RFC 7515 section 4.1.11)")

// Caller returns the caller r's bearer token identifies, nil when r has
// none, it does not verify or it lacks a required scope: for pages (the web catalog) that serve
// anonymous callers too.
func (a *Auth) Caller(r *http.Request) *skillserver.Caller {
	tok, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil
	}
	v, err := a.check(r.Context(), tok)
	if err != nil || !a.fresh(v.ti) {
		return nil
	}
	for _, s := range a.opts.Scopes {
		if !slices.Contains(v.ti.Scopes, s) {
			return nil
		}
	}
	return v.caller
}

func (a *Auth) fresh(ti *auth.TokenInfo) bool {
	return !ti.Expiration.IsZero() && time.Now().Before(ti.Expiration.Add(a.opts.ClockSkew))
}

// bearerToken extracts the token of an "Authorization: Bearer TOKEN"
// header (RFC 6750 §2.1: the scheme is case-insensitive, one space, a
// token68).
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || len(tok) > maxTokenBytes {
		return "", false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/=", c) >= 0) {
			return "", false
		}
	}
	return tok, true
}

// maxTokenBytes bounds the bearer token a request may present; the header
// limit bounds it too, this keeps the work per request small whatever that
// is set to.
const maxTokenBytes = 16 << 10

// require is the middleware in front of the MCP handler: no or a bad
// token gets 401 with the metadata URL, a token missing a required scope
// 403 insufficient_scope naming the scopes, and a good one reaches next
// with its [skillserver.Caller] in the request context.
func (a *Auth) require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		tok, ok := bearerToken(h)
		if !ok {
			msg := "this server requires a bearer token: sign in with the authorization server named in " + a.prmURL
			if h != "" {
				a.challenge(w, r, http.StatusUnauthorized, "invalid_request", "the Authorization header is not \"Bearer TOKEN\"")
				return
			}
			// RFC 6750 §3.1: no error code for a request without credentials.
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer resource_metadata=%q", a.prmURL))
			writeErrorID(w, http.StatusUnauthorized, requestID(r), msg)
			return
		}
		v, err := a.check(r.Context(), tok)
		ti := v.ti
		if err != nil && !errors.Is(err, auth.ErrInvalidToken) {
			// Not the token's fault: asking for another would not help.
			writeErrorID(w, http.StatusServiceUnavailable, requestID(r), "cannot check the bearer token right now; try again later")
			return
		}
		if err != nil {
			a.challenge(w, r, http.StatusUnauthorized, "invalid_token", "the bearer token was refused: "+strings.TrimPrefix(err.Error(), auth.ErrInvalidToken.Error()+": "))
			return
		}
		if !a.fresh(ti) {
			a.challenge(w, r, http.StatusUnauthorized, "invalid_token", "the bearer token has expired")
			return
		}
		for _, s := range a.opts.Scopes {
			if !slices.Contains(ti.Scopes, s) {
				a.challenge(w, r, http.StatusForbidden, "insufficient_scope", "the bearer token lacks the scope "+s)
				return
			}
		}
		ctx := skillserver.ContextWithCaller(r.Context(), v.caller)
		// go-sdk's middleware, handed the token already verified, records
		// it where the MCP transport looks: a session is then bound to the
		// subject that opened it, and another token cannot use it.
		// It checks expiry again: given a longer leeway than ours, it never
		// refuses (with a bare 401) a token fresh checked inside the leeway.
		auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return ti, nil
		}, &auth.RequireBearerTokenOptions{ResourceMetadataURL: a.prmURL, ClockSkew: a.opts.ClockSkew + time.Minute})(next).ServeHTTP(w, r.WithContext(ctx))
	})
}

// Require is the middleware that protects /mcp, for other routes that
// need a valid token (a registry's write API): no or a bad token gets 401
// with the metadata URL, a token missing a required scope 403, and a good
// one reaches next with its [skillserver.Caller] in the request context.
func (a *Auth) Require(next http.Handler) http.Handler { return a.require(next) }

// challenge refuses r with code, the RFC 6750 challenge naming errCode
// and desc, and a JSON-RPC error answering r's id.
func (a *Auth) challenge(w http.ResponseWriter, r *http.Request, code int, errCode, desc string) {
	params := []string{fmt.Sprintf("resource_metadata=%q", a.prmURL), fmt.Sprintf("error=%q", errCode)}
	if len(a.opts.Scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(a.opts.Scopes, " ")))
	}
	params = append(params, fmt.Sprintf("error_description=%q", strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return ' '
		}
		return r
	}, desc)))
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	writeErrorID(w, code, requestID(r), desc)
}

// mountAuth publishes the Protected Resource Metadata at the RFC 9728
// well-known path (with and without the resource's path).
func (a *Auth) mount(mux *http.ServeMux) {
	h := auth.ProtectedResourceMetadataHandler(a.Metadata())
	u, _ := url.Parse(a.prmURL)
	mux.Handle("/.well-known/oauth-protected-resource", h)
	if u != nil && u.Path != "/.well-known/oauth-protected-resource" {
		mux.Handle(u.Path, h)
	}
}

// Identify puts the caller of a request with a valid bearer token (and
// every required scope) in its context, and serves everyone: for pages,
// such as the web catalog, that anonymous callers may see part of. A
// missing or refused token makes the request anonymous, never an error.
// Since the answer depends on the token, responses say so to caches
// (Vary: Authorization) and, unless the handler sets its own
// Cache-Control (static assets), forbid shared caches to keep them.
func (a *Auth) Identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Authorization")
		w.Header().Set("Cache-Control", "private")
		if c := a.Caller(r); c != nil {
			r = r.WithContext(skillserver.ContextWithCaller(r.Context(), c))
		}
		next.ServeHTTP(w, r)
	})
}
