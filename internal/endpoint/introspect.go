package endpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Introspection configures RFC 7662 token introspection, for authorization
// servers that issue opaque (non-JWT) access tokens.
type Introspection struct {
	// URL is the introspection endpoint; empty means the one the issuer's
	// metadata names (introspection_endpoint).
	URL string
	// ClientID and ClientSecret authenticate this server to the endpoint
	// (HTTP Basic, RFC 7662 §2.1). Read them from the environment or a
	// file, never from a command-line flag (other users can read those).
	ClientID, ClientSecret string
}

// maxIntrospectionBytes bounds an introspection response.
const maxIntrospectionBytes = 64 << 10

// introspectionResponse is the part of an RFC 7662 response the server
// uses.
type introspectionResponse struct {
	Active bool            `json:"active"`
	Scope  string          `json:"scope"`
	Sub    string          `json:"sub"`
	Aud    json.RawMessage `json:"aud"`
	Exp    *float64        `json:"exp"`
	Nbf    *float64        `json:"nbf"`
	Iss    string          `json:"iss"`
	Groups any             `json:"groups"`
}

// audiences decodes "aud", a string or an array of strings.
func audiences(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	json.Unmarshal(raw, &many)
	return many
}

// introspect asks the authorization server about an opaque token. Only an
// active token for this resource (aud), of this issuer (iss, when given),
// with an expiry, is accepted; every refusal wraps auth.ErrInvalidToken.
func (a *Auth) introspect(ctx context.Context, tok string) (*auth.TokenInfo, error) {
	form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.introspectURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("endpoint: introspection request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	in := a.opts.Introspection
	req.SetBasicAuth(url.QueryEscape(in.ClientID), url.QueryEscape(in.ClientSecret))
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("endpoint: introspecting the token at %s: %w", a.introspectURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIntrospectionBytes+1))
	if err != nil {
		return nil, fmt.Errorf("endpoint: introspecting the token at %s: %w", a.introspectURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("endpoint: the introspection endpoint %s answered %s; check the introspection client's credentials", a.introspectURL, resp.Status)
	}
	if len(body) > maxIntrospectionBytes {
		return nil, fmt.Errorf("endpoint: the introspection endpoint %s answered more than %d bytes", a.introspectURL, maxIntrospectionBytes)
	}
	var r introspectionResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("endpoint: the introspection endpoint %s answered invalid JSON: %v", a.introspectURL, err)
	}
	now := time.Now()
	switch {
	case !r.Active:
		return nil, fmt.Errorf("%w: the authorization server says the token is not active", auth.ErrInvalidToken)
	case r.Exp == nil:
		return nil, fmt.Errorf("%w: the introspection response has no exp", auth.ErrInvalidToken)
	case !slices.Contains(audiences(r.Aud), a.opts.Audience):
		return nil, fmt.Errorf("%w: the token is not for this resource (aud does not name %s)", auth.ErrInvalidToken, a.opts.Audience)
	case r.Iss != "" && r.Iss != a.meta.Issuer:
		return nil, fmt.Errorf("%w: the token's issuer is %q, not %q", auth.ErrInvalidToken, r.Iss, a.meta.Issuer)
	case r.Nbf != nil && now.Add(a.opts.ClockSkew).Before(unix(*r.Nbf)):
		return nil, fmt.Errorf("%w: the token is not valid yet", auth.ErrInvalidToken)
	}
	ti := &auth.TokenInfo{UserID: r.Sub, Scopes: strings.Fields(r.Scope), Expiration: unix(*r.Exp), Extra: map[string]any{}}
	if r.Groups != nil {
		ti.Extra["groups"] = r.Groups
	}
	return ti, nil
}

func unix(f float64) time.Time { return time.Unix(int64(f), 0) }

// isJWT reports whether tok has a JWS compact serialization's shape.
func isJWT(tok string) bool { return strings.Count(tok, ".") == 2 }

var errOpaque = errors.New("the token is not a JWT, and this server verifies JWTs only: configure token introspection (--auth-introspection-client) for an authorization server that issues opaque tokens")

// maxIssuerMetadataBytes bounds the issuer's metadata document.
const maxIssuerMetadataBytes = 1 << 20

// issuerMetadata fetches the issuer's metadata at metadataURL as a
// resource server needs it: issuer (which must be the configured one),
// jwks_uri and introspection_endpoint. It is nil, without error, when the
// URL answers 4xx (try the next location). go-sdk's GetAuthServerMeta
// also refuses an issuer that does not advertise PKCE, a requirement of
// the clients that sign in there: a resource server only verifies tokens,
// and must accept such an issuer.
func issuerMetadata(ctx context.Context, hc *http.Client, metadataURL, issuer string) (*oauthex.AuthServerMeta, error) {
	if err := httpsOrLoopback(metadataURL); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metadataURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return nil, nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxIssuerMetadataBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxIssuerMetadataBytes {
		return nil, fmt.Errorf("the metadata is larger than %d bytes", maxIssuerMetadataBytes)
	}
	var m oauthex.AuthServerMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("the metadata is not a JSON object of OAuth metadata: %v", err)
	}
	if strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return nil, fmt.Errorf("metadata issuer %q does not match issuer URL %q", m.Issuer, issuer)
	}
	for field, u := range map[string]string{"jwks_uri": m.JWKSURI, "introspection_endpoint": m.IntrospectionEndpoint} {
		if u == "" {
			continue
		}
		if err := httpsOrLoopback(u); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
	}
	return &m, nil
}

// httpsOrLoopback refuses a URL that is neither https nor http on a
// loopback host.
func httpsOrLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); u.Scheme == "http" && (host == "localhost" || ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("%q must use https (http only on a loopback address)", raw)
}
