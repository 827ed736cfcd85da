package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/skillport/skillport/internal/mcphttp"
)

// MaxChallengeBytes bounds the WWW-Authenticate headers read from one
// response: a challenge names a metadata URL and a few scopes.
const MaxChallengeBytes = 8 << 10

// Challenge is what a server's 401 or 403 says about the token it wants
// (RFC 6750 section 3, RFC 9728 section 5.1).
type Challenge struct {
	// ResourceMetadata is the URL of the server's protected resource
	// metadata, if the server named it.
	ResourceMetadata string
	// Scopes are the scopes the server asks for.
	Scopes []string
	// Error is the error code: "invalid_token", "insufficient_scope", ...
	Error            string
	ErrorDescription string
}

// ParseChallenge reads the Bearer challenge from a response's
// WWW-Authenticate headers. No Bearer challenge is not an error (the
// server may only say 401); a malformed header is.
func ParseChallenge(headers []string) (*Challenge, error) {
	n := 0
	for _, h := range headers {
		n += len(h)
	}
	if n > MaxChallengeBytes {
		return nil, fmt.Errorf("WWW-Authenticate: %d bytes, more than the %d a challenge may have", n, MaxChallengeBytes)
	}
	cs, err := oauthex.ParseWWWAuthenticate(headers)
	if err != nil {
		return nil, fmt.Errorf("WWW-Authenticate %q: %v", strings.Join(headers, ", "), err)
	}
	ch := &Challenge{}
	for _, c := range cs {
		if c.Scheme != "bearer" {
			continue
		}
		ch.ResourceMetadata = c.Params["resource_metadata"]
		ch.Scopes = strings.Fields(c.Params["scope"])
		ch.Error = c.Params["error"]
		ch.ErrorDescription = c.Params["error_description"]
		break
	}
	if ch.ResourceMetadata != "" {
		u, err := url.Parse(ch.ResourceMetadata)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("WWW-Authenticate: resource_metadata %q is not an http(s) URL", ch.ResourceMetadata)
		}
	}
	return ch, nil
}

// Discovery is what a client learns before it asks for a token: the
// server's protected resource metadata (RFC 9728) and its authorization
// server's metadata (RFC 8414 or OpenID Connect Discovery).
type Discovery struct {
	Challenge *Challenge
	// MetadataURL is where the protected resource metadata was found; empty
	// for a server that publishes none (the 2025-03-26 fallback: the
	// server's origin is its authorization server).
	MetadataURL string
	Resource    *oauthex.ProtectedResourceMetadata
	AuthServer  *oauthex.AuthServerMeta
}

// Discover finds the server's metadata, starting from the challenge of its
// 401 (nil: none) and falling back to the well-known paths: at the
// endpoint's path, then at the root. The metadata's resource must be the
// server's URL (or, at the root, its origin), so that a server cannot
// send the client's token to another resource's authorization server.
func Discover(ctx context.Context, c *http.Client, serverURL string, ch *Challenge) (*Discovery, error) {
	if ch == nil {
		ch = &Challenge{}
	}
	c = mcphttp.Guard(c, DefaultTimeout)
	su, err := url.Parse(serverURL)
	if err != nil || su.Host == "" {
		return nil, fmt.Errorf("server URL %q is not an http(s) URL", serverURL)
	}
	type candidate struct{ url, resource string }
	var cands []candidate
	if ch.ResourceMetadata != "" {
		cands = append(cands, candidate{ch.ResourceMetadata, serverURL})
	}
	wk := *su
	wk.RawQuery, wk.Fragment, wk.RawPath = "", "", ""
	wk.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(su.Path, "/")
	cands = append(cands, candidate{wk.String(), serverURL})
	wk.Path = "/.well-known/oauth-protected-resource"
	origin := url.URL{Scheme: su.Scheme, Host: su.Host}
	cands = append(cands, candidate{wk.String(), origin.String()})

	d := &Discovery{Challenge: ch}
	for _, cand := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, cand.url, cand.resource, c)
		if err != nil {
			if cand.url == ch.ResourceMetadata {
				// The server named this document: one that is wrong is
				// an error, not a reason to look elsewhere.
				return nil, fmt.Errorf("protected resource metadata of %s: %v", serverURL, err)
			}
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("protected resource metadata %s names no authorization_servers", cand.url)
		}
		d.MetadataURL, d.Resource = cand.url, prm
		break
	}
	if d.Resource == nil {
		// 2025-03-26: no metadata; the server's origin is its
		// authorization server.
		d.Resource = &oauthex.ProtectedResourceMetadata{Resource: serverURL, AuthorizationServers: []string{origin.String()}}
	}
	issuer := d.Resource.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, c)
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata of %s: %v", issuer, err)
	}
	if asm == nil {
		if d.MetadataURL == "" {
			// 2025-03-26 default endpoints, relative to the origin.
			asm = &oauthex.AuthServerMeta{Issuer: issuer, AuthorizationEndpoint: issuer + "/authorize", TokenEndpoint: issuer + "/token", RegistrationEndpoint: issuer + "/register"}
		} else {
			return nil, fmt.Errorf("authorization server %s publishes no metadata (RFC 8414 or OpenID Connect Discovery)", issuer)
		}
	}
	if asm.TokenEndpoint == "" {
		return nil, fmt.Errorf("authorization server metadata of %s has no token_endpoint", issuer)
	}
	d.AuthServer = asm
	return d, nil
}
