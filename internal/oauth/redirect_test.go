package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRevokeNeverFollowsToAnotherOrigin: the sign-in client's requests carry
// tokens and secrets (here a refresh token being revoked, with the client
// secret as Basic auth). A redirect from the authorization server at https://A
// to http://B (the same host, another port: net/http forwards credentials
// there) is refused, and B receives nothing.
func TestRevokeNeverFollowsToAnotherOrigin(t *testing.T) {
	var reached atomic.Int32
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	defer b.Close()
	var a *httptest.Server
	a = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{
				"issuer": a.URL, "authorization_endpoint": a.URL + "/authorize", "token_endpoint": a.URL + "/token",
				"revocation_endpoint": a.URL + "/revoke", "code_challenge_methods_supported": []string{"S256"},
				"response_types_supported": []string{"code"},
			})
			return
		}
		// 302: net/http follows it as a GET, with the Basic credentials.
		http.Redirect(w, r, b.URL+"/revoke", http.StatusFound)
	}))
	defer a.Close()
	tok := &Token{Issuer: a.URL, ClientID: "c", ClientSecret: "client-secret", RefreshToken: "refresh-secret"}
	err := Revoke(context.Background(), a.Client(), tok)
	if reached.Load() != 0 {
		t.Fatal("the refresh token and client secret reached another origin")
	}
	if err == nil || !strings.Contains(err.Error(), "refused a redirect") {
		t.Fatalf("Revoke = %v; want the redirect refused", err)
	}
}
