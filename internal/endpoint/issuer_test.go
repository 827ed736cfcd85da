package endpoint_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/skillport/skillport/internal/endpoint"
)

// plainIssuer is an authorization server whose metadata has only what a
// resource server needs (issuer, jwks_uri): no PKCE methods, no
// authorization endpoint. meta, when set, replaces the metadata document.
func plainIssuer(t *testing.T, meta func(url string) string) (url string, key *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		doc := `{"issuer": "` + ts.URL + `", "jwks_uri": "` + ts.URL + `/jwks"}`
		if meta != nil {
			doc = meta(ts.URL)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(doc))
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	return ts.URL, key
}

// TestIssuerWithoutPKCE: token validation needs only the issuer and its
// jwks_uri; an issuer whose metadata does not advertise PKCE (a client's
// concern) is accepted and its tokens verified (issue 27.11). Metadata
// that names another issuer, a non-loopback http jwks_uri or is larger
// than 1 MiB is refused, naming the URL.
func TestIssuerWithoutPKCE(t *testing.T) {
	iss, key := plainIssuer(t, nil)
	a, err := endpoint.NewAuth(t.Context(), endpoint.AuthOptions{Issuer: iss, Audience: testAudience})
	if err != nil {
		t.Fatalf("an issuer without PKCE in its metadata was refused: %v", err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": iss, "aud": testAudience, "sub": "alice", "scope": "skills:read",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(),
	})
	tok.Header["kid"] = "k1"
	signed, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := a.Verify(t.Context(), signed, nil)
	if err != nil || ti.UserID != "alice" {
		t.Fatalf("a token of that issuer: %+v, %v", ti, err)
	}

	for name, tc := range map[string]struct {
		meta func(string) string
		want string
	}{
		"other issuer":  {func(u string) string { return `{"issuer": "https://other.example", "jwks_uri": "` + u + `/jwks"}` }, "does not match"},
		"http jwks_uri": {func(u string) string { return `{"issuer": "` + u + `", "jwks_uri": "http://keys.example/jwks"}` }, "must use https"},
		"huge":          {func(u string) string { return `{"issuer": "` + u + `", "x": "` + strings.Repeat("a", 1<<20) + `"}` }, "larger than"},
	} {
		iss, _ := plainIssuer(t, tc.meta)
		_, err := endpoint.NewAuth(t.Context(), endpoint.AuthOptions{Issuer: iss, Audience: testAudience})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), iss) {
			t.Errorf("%s: %v, want an error naming %s and saying %q", name, err, iss, tc.want)
		}
	}
}
