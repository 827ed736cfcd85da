package mcphttp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestCredentialsNeverCrossOrigins is issue 25's eighth attack: after a 307
// from https://127.0.0.1:A to http://127.0.0.1:B, net/http sends the bearer
// token to B in cleartext (it only drops it for another host name). A
// request carrying a credential is refused at the redirect instead; one
// carrying none may follow it.
func TestCredentialsNeverCrossOrigins(t *testing.T) {
	var leaked, reached atomic.Int32
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" || r.ContentLength > 0 {
			leaked.Add(1)
		}
	}))
	defer b.Close()
	redirect := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			http.Redirect(w, r, "/ok", http.StatusTemporaryRedirect)
			return
		}
		if r.URL.Path == "/ok" {
			return
		}
		http.Redirect(w, r, b.URL+"/x", http.StatusTemporaryRedirect)
	}
	tlsA := httptest.NewTLSServer(http.HandlerFunc(redirect))
	defer tlsA.Close()
	plainA := httptest.NewServer(http.HandlerFunc(redirect))
	defer plainA.Close()

	for _, tc := range []struct {
		name, url, method, header, body string
		refused                         bool
	}{
		{"https to http, bearer", tlsA.URL + "/mcp", "POST", "Authorization", "{}", true},
		{"https to http, bearer, GET", tlsA.URL + "/mcp", "GET", "Authorization", "", true},
		{"other port, cookie", plainA.URL + "/mcp", "GET", "Cookie", "", true},
		{"other port, body (a token request)", plainA.URL + "/token", "POST", "", "code=secret", true},
		{"other port, no credential", plainA.URL + "/doc", "GET", "", "", false},
		{"same origin, bearer", tlsA.URL + "/same", "POST", "Authorization", "{}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaked.Store(0)
			reached.Store(0)
			c := Guard(tlsA.Client(), time.Minute) // trusts A's certificate
			req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
			if tc.body == "" {
				req.Body, req.ContentLength = nil, 0
			}
			if tc.header != "" {
				req.Header.Set(tc.header, "Bearer secret-token")
			}
			resp, err := c.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "refused a redirect") || !strings.Contains(err.Error(), "credentials") {
					t.Fatalf("Do = %v; want the redirect refused with its reason", err)
				}
				if reached.Load() != 0 {
					t.Fatalf("the request reached the other origin")
				}
			} else if err != nil {
				t.Fatalf("Do = %v; want the redirect followed", err)
			}
			if leaked.Load() != 0 {
				t.Fatal("a credential reached the other origin")
			}
		})
	}
}

func TestFileLimit(t *testing.T) {
	for _, tc := range []struct{ size, want int64 }{
		{0, Envelope},
		{1000, 6000 + Envelope},
		{-1, MaxMessage},
		{16 << 20, MaxMessage},
		{1 << 62, MaxMessage},
	} {
		if got := FileLimit(tc.size); got != tc.want {
			t.Errorf("FileLimit(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}
