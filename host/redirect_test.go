package host

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// staticToken is an OAuthHandler holding one token, as a signed-in host has.
type staticToken struct{}

func (staticToken) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "secret-token"}), nil
}

func (staticToken) Authorize(context.Context, *http.Request, *http.Response) error {
	return errors.New("no sign-in in this test")
}

// TestTokenNeverFollowsARedirect: an MCP endpoint that redirects (307) to
// the same host on another port gets no token there, whether the token is
// a configured header or comes from the sign-in handler; the origin fails
// saying which redirect was refused.
func TestTokenNeverFollowsARedirect(t *testing.T) {
	var leaked atomic.Int32
	f := newFake("b")
	f.addSkill("s", "A skill", nil)
	s := f.build()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	defer b.Close()
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, b.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer a.Close()

	for name, o := range map[string]Origin{
		"header": {Label: "a", URL: a.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer secret-token"}},
		"oauth":  {Label: "a", URL: a.URL + "/mcp", OAuth: staticToken{}},
	} {
		t.Run(name, func(t *testing.T) {
			leaked.Store(0)
			st := connectOne(t, o, 5*time.Second)
			if leaked.Load() != 0 {
				t.Fatal("the token reached the origin the endpoint redirected to")
			}
			if st.Err == nil || !strings.Contains(st.Err.Error(), "refused a redirect") {
				t.Fatalf("origin status error = %v; want the refused redirect named", st.Err)
			}
		})
	}
}
