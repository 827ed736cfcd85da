package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/skillport/skillport/internal/mcphttp"
)

// ErrNoRevocation is returned by Revoke for an authorization server that
// offers no revocation endpoint: the token stays valid until it expires.
var ErrNoRevocation = errors.New("the authorization server offers no token revocation")

// Revoke asks the authorization server that issued t to revoke it (RFC
// 7009): the refresh token, which revokes the grant, else the access
// token. The client authenticates as it did for the token; c nil means a
// client with DefaultTimeout.
func Revoke(ctx context.Context, c *http.Client, t *Token) error {
	c = mcphttp.Guard(c, DefaultTimeout)
	if t.Issuer == "" {
		return ErrNoRevocation
	}
	asm, err := auth.GetAuthServerMetadata(ctx, t.Issuer, c)
	if err != nil {
		return fmt.Errorf("authorization server metadata of %s: %v", t.Issuer, err)
	}
	if asm == nil || asm.RevocationEndpoint == "" {
		return fmt.Errorf("%w (%s)", ErrNoRevocation, t.Issuer)
	}
	form := url.Values{"token": {t.RefreshToken}, "token_type_hint": {"refresh_token"}}
	if t.RefreshToken == "" {
		form = url.Values{"token": {t.AccessToken}, "token_type_hint": {"access_token"}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, asm.RevocationEndpoint, nil)
	if err != nil {
		return fmt.Errorf("revocation endpoint %q: %v", asm.RevocationEndpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if t.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(t.ClientID), url.QueryEscape(t.ClientSecret))
	} else {
		form.Set("client_id", t.ClientID)
	}
	body := form.Encode()
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("revoking at %s: %w", asm.RevocationEndpoint, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoking at %s: %s %s", asm.RevocationEndpoint, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
