package oauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func FuzzParseChallenge(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="https://s/.well-known/oauth-protected-resource", scope="a b"`,
		`Bearer error="insufficient_scope", scope="x", error_description="y"`,
		`Basic realm="r", Bearer`,
		`Bearer realm="a\"b"`,
		`Bearer ,,,`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		ch, err := ParseChallenge([]string{h})
		if err == nil && ch == nil {
			t.Fatal("nil challenge without an error")
		}
		if err == nil && ch.ResourceMetadata != "" && !strings.HasPrefix(ch.ResourceMetadata, "http") {
			t.Fatalf("resource_metadata %q accepted", ch.ResourceMetadata)
		}
	})
}

// FuzzDiscover serves fuzzed protected resource and authorization server
// metadata: discovery returns a usable result or an error, never panics,
// and never accepts metadata of another resource.
func FuzzDiscover(f *testing.F) {
	f.Add(`{"resource":"RES","authorization_servers":["BASE/as"]}`, `{"issuer":"BASE/as","authorization_endpoint":"BASE/a","token_endpoint":"BASE/t"}`)
	f.Add(`{"resource":"RES","authorization_servers":[]}`, `{}`)
	f.Add(`{"resource":"https://x/mcp","authorization_servers":["javascript:x"]}`, `null`)
	f.Add(`[]`, `{"issuer":1}`)
	f.Fuzz(func(t *testing.T, prm, asm string) {
		var base string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch {
			case strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource"):
				w.Write([]byte(strings.NewReplacer("RES", base+"/mcp", "BASE", base).Replace(prm)))
			case strings.Contains(r.URL.Path, "/.well-known/"):
				w.Write([]byte(strings.ReplaceAll(asm, "BASE", base)))
			default:
				http.NotFound(w, r)
			}
		}))
		defer srv.Close()
		base = srv.URL
		d, err := Discover(context.Background(), &http.Client{Timeout: 2 * time.Second}, base+"/mcp", nil)
		if err != nil {
			return
		}
		if d.AuthServer == nil || d.AuthServer.TokenEndpoint == "" || len(d.Resource.AuthorizationServers) == 0 {
			t.Fatalf("incomplete discovery accepted: %+v", d)
		}
		if d.MetadataURL != "" && d.Resource.Resource != base+"/mcp" && d.Resource.Resource != base {
			t.Fatalf("metadata of %q accepted for %s/mcp", d.Resource.Resource, base)
		}
	})
}
