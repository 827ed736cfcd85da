package endpoint_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/oidctest"
)

// countingTransport counts the requests to paths ending in suffix.
type countingTransport struct {
	suffix string
	n      atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, c.suffix) {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestIntrospection: an opaque access token from a real OpenID provider is
// refused by a server that verifies JWTs only, and accepted through RFC
// 7662 introspection (endpoint discovered or given), with the caller's
// scopes and groups deciding visibility; a positive answer is cached, so
// the endpoint is asked once per token.
func TestIntrospection(t *testing.T) {
	o := oidctest.Start(t, testAudience)
	opaque := o.Token(t, "opaque", "skills:read")
	if strings.Count(opaque, ".") == 2 {
		t.Fatalf("the provider issued a JWT, not an opaque token: %s", opaque)
	}

	t.Run("without introspection", func(t *testing.T) {
		ts := serveAuth(t, o)
		resp, body := post(t, ts, initBody, bearer(opaque))
		if h := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(h, "not a JWT") {
			t.Fatalf("%s %q %s", resp.Status, h, body)
		}
	})

	for _, tc := range []struct{ name, url string }{
		{"discovered", ""},
		{"given", o.URL + "/oauth/introspect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := &countingTransport{suffix: "/introspect"}
			ts := serveAuthWith(t, o, func(ao *endpoint.AuthOptions) {
				ao.HTTPClient = &http.Client{Transport: ct}
				ao.Introspection = &endpoint.Introspection{URL: tc.url, ClientID: "rs", ClientSecret: "secret"}
			})
			h := authSession(t, ts, opaque)
			// group ops (from the introspection answer) sees the runbook
			if got := call(t, ts, h, "skills/list", `{}`); !strings.Contains(got, "team/runbook") || strings.Contains(got, "payroll") {
				t.Errorf("skills/list with an opaque token: %s", got)
			}
			for range 5 {
				call(t, ts, h, "skills/list", `{}`)
			}
			if n := ct.n.Load(); n != 1 {
				t.Errorf("the introspection endpoint was called %d times for one token, want 1 (cached until exp)", n)
			}
			for _, bad := range []struct {
				name, tok string
				status    int
			}{
				{"unknown opaque token", "bm90LWEtdG9rZW4", 401},
				{"opaque, lacking the scope", o.Token(t, "opaque", "skills:other"), 403},
			} {
				if resp, body := post(t, ts, initBody, bearer(bad.tok)); resp.StatusCode != bad.status {
					t.Errorf("%s: %s %s, want %d", bad.name, resp.Status, body, bad.status)
				}
			}
			// JWTs are still verified locally.
			if resp, body := post(t, ts, initBody, bearer(o.Token(t, "alice", "skills:read"))); resp.StatusCode != 200 {
				t.Errorf("a JWT next to introspection: %s %s", resp.Status, body)
			}
		})
	}

	t.Run("wrong client secret", func(t *testing.T) {
		ts := serveAuthWith(t, o, func(ao *endpoint.AuthOptions) {
			ao.Introspection = &endpoint.Introspection{ClientID: "rs", ClientSecret: "wrong"}
		})
		// Not the token's fault: no challenge to get another.
		if resp, body := post(t, ts, initBody, bearer(opaque)); resp.StatusCode != 503 {
			t.Errorf("%s %s, want 503", resp.Status, body)
		}
	})
}
