package endpoint

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// FuzzBearerToken: whatever the Authorization header, parsing it never
// panics, and a token it returns is a non-empty RFC 6750 token68 within
// the size bound that the header really carried.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc.def.ghi", "bearer  x", "Basic YQ==", "Bearer", "Bearer ", "Bearer a b", "BEARER a=", "Bearer \x00", "Bearer " + strings.Repeat("a", maxTokenBytes+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, ok := bearerToken(h)
		if !ok {
			if tok != "" {
				t.Fatalf("refused %q but returned %q", h, tok)
			}
			return
		}
		if tok == "" || len(tok) > maxTokenBytes || !strings.HasSuffix(h, tok) {
			t.Fatalf("bearerToken(%q) = %q", h, tok)
		}
		if strings.ContainsAny(tok, " \t\r\n\"\\,") {
			t.Fatalf("token %q carries a separator", tok)
		}
		if !strings.EqualFold(h[:6], "bearer") {
			t.Fatalf("accepted scheme of %q", h)
		}
	})
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		h, tok string
		ok     bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"Bearer a.b-c_d~e+f/g==", "a.b-c_d~e+f/g==", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer a b", "", false},
		{"Basic abc", "", false},
		{"Bearerabc", "", false},
		{"Bearer " + strings.Repeat("a", maxTokenBytes), strings.Repeat("a", maxTokenBytes), true},
		{"Bearer " + strings.Repeat("a", maxTokenBytes+1), "", false},
	} {
		tok, ok := bearerToken(tc.h)
		if tok != tc.tok || ok != tc.ok {
			t.Errorf("bearerToken(%.40q) = %.20q, %v; want %.20q, %v", tc.h, tok, ok, tc.tok, tc.ok)
		}
	}
}

// FuzzIntrospection: whatever the introspection endpoint answers, checking
// a token never panics, and a token is accepted only when the answer says
// active, names this resource in aud, carries exp and, if it names an
// issuer, the right one.
func FuzzIntrospection(f *testing.F) {
	for _, s := range []string{
		`{"active":true,"aud":"https://skills.test/mcp","exp":4102444800,"sub":"a","scope":"x y","groups":["g"]}`,
		`{"active":true,"aud":["https://skills.test/mcp","o"],"exp":4102444800,"iss":"https://issuer.test"}`,
		`{"active":false}`, `{"active":true}`, `{"active":true,"aud":"https://skills.test/mcp","exp":"soon"}`,
		`[]`, `null`, `{"active":true,"aud":"https://skills.test/mcp","exp":1e400}`, "",
	} {
		f.Add([]byte(s))
	}
	var body atomic.Value
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body.Load().([]byte))
	}))
	f.Cleanup(ts.Close)
	a := &Auth{opts: AuthOptions{Audience: "https://skills.test/mcp", Introspection: &Introspection{ClientID: "rs", ClientSecret: "s"}},
		meta: &oauthex.AuthServerMeta{Issuer: "https://issuer.test"}, hc: ts.Client(), introspectURL: ts.URL}
	f.Fuzz(func(t *testing.T, b []byte) {
		body.Store(b)
		ti, err := a.introspect(context.Background(), "opaque")
		if err != nil {
			return
		}
		var r introspectionResponse
		if json.Unmarshal(b, &r) != nil || !r.Active || r.Exp == nil || ti.Expiration.IsZero() ||
			!slices.Contains(audiences(r.Aud), a.opts.Audience) || r.Iss != "" && r.Iss != a.meta.Issuer {
			t.Fatalf("accepted %q", b)
		}
	})
}
