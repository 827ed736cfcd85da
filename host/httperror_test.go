package host

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHTTPRefusalsSayTheCause: a stopped server, a refused token, a
// missing scope and a mistyped path are each one line naming the URL, the
// cause in words (the server's error_description) and the fix; never the
// SDK's chain ending in "Unauthorized" or "Not Found".
func TestHTTPRefusalsSayTheCause(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/expired":
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="The access token is expired"`)
			w.WriteHeader(http.StatusUnauthorized)
		case "/scope":
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="skills:read"`)
			w.WriteHeader(http.StatusForbidden)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stopped := "http://" + l.Addr().String() + "/mcp"
	l.Close()

	for _, tc := range []struct {
		url  string
		want string
	}{
		{stopped, stopped + ": nothing is listening there (connection refused); start the server, or check the host and port"},
		{srv.URL + "/expired", srv.URL + "/expired: the server refused the credentials (401): The access token is expired; sign in again or send a valid token"},
		{srv.URL + "/scope", srv.URL + `/scope: the server refused access (403) (insufficient_scope); it needs scope "skills:read"; use a token that grants it, or ask the server's administrator for access`},
		{srv.URL + "/mpc", srv.URL + "/mpc: no MCP endpoint at /mpc (404 Not Found); is it /mcp?"},
		{srv.URL + "/api/skills", srv.URL + "/api/skills: no MCP endpoint at /api/skills (404 Not Found); give the server's MCP endpoint URL (often ending in /mcp)"},
	} {
		h := connect(t, nil, Origin{Label: "s", URL: tc.url, Headers: map[string]string{"Authorization": "Bearer t"}})
		st := h.Origins()[0]
		var he *HTTPError
		if !errors.As(st.Err, &he) || he.Error() != tc.want || !errors.Is(st.Err, ErrUnavailable) {
			t.Errorf("%s:\n got %v\nwant %s", tc.url, st.Err, tc.want)
		}
	}
}

func FuzzParseChallenge(f *testing.F) {
	f.Add(`Bearer error="invalid_token", error_description="The access token is expired"`)
	f.Add(`Bearer realm="x", scope="a b", error="insufficient_scope"`)
	f.Add(`Bearer error=invalid_token, error_description="a \"quoted\" \x1b[31m word"`)
	f.Fuzz(func(t *testing.T, h string) {
		a, d, s := parseChallenge(h)
		for _, v := range []string{a, d, s} {
			if len(v) > maxChallengeField+len("…") || strings.ContainsAny(v, "\x00\x1b\n\r") || !utf8.ValidString(v) {
				t.Fatalf("parseChallenge(%q) kept %q", h, v)
			}
		}
	})
}

// seenHeader records the Mcp-Protocol-Version header of each request.
type seenHeader struct{ got []string }

func (s *seenHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	s.got = append(s.got, r.Header.Get(protocolHeader))
	return &http.Response{StatusCode: http.StatusAccepted, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
}

// TestNotificationsCarryTheRevision: a notification the SDK posts without
// Mcp-Protocol-Version (notifications/cancelled on a 2026-07-28
// connection) gets the revision of the connection's accepted requests;
// requests are left as they are.
func TestNotificationsCarryTheRevision(t *testing.T) {
	seen := &seenHeader{}
	rec := &httpRecorder{next: seen}
	post := func(body, version string) {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", strings.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
		if version != "" {
			r.Header.Set(protocolHeader, version)
		}
		if _, err := rec.RoundTrip(r); err != nil {
			t.Fatal(err)
		}
	}
	post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, "") // nothing negotiated yet
	post(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, "2026-07-28")
	post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, "")
	post(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}`, "")
	// After an initialize (a fallback from server/discover), the SDK's own
	// headers rule: notifications/initialized goes as it is.
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "")
	if want := []string{"", "2026-07-28", "2026-07-28", "", ""}; strings.Join(seen.got, ",") != strings.Join(want, ",") {
		t.Errorf("headers sent %q, want %q", seen.got, want)
	}
}
