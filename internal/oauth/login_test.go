package oauth_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/oauth"
	"github.com/skillport/skillport/internal/oidctest"
)

// TestHeadlessLogin signs in with no browser: the authorization URL is
// printed, a person opens it (here: follows the real provider's login
// form), and the loopback listener receives the code.
func TestHeadlessLogin(t *testing.T) {
	resource, op, challenge := protectedResource(t)

	pr, pw := io.Pipe()
	defer pw.Close()
	browse := op.Browser(t)
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u := regexp.MustCompile(`https?://\S+/authorize\?\S+`).FindString(sc.Text()); u != "" {
				done <- browse(u)
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	store := oauth.NewStore(filepath.Join(t.TempDir(), "tokens.json"))
	h, err := oauth.New(resource, &oauth.Options{
		Store: store, ClientID: oidctest.CLIClient, Interactive: true, NoBrowser: true, Stderr: pw,
		Browser:      func(string) error { t.Error("a browser was opened with NoBrowser"); return nil },
		LoginTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", resource, nil)
	if err := h.Authorize(context.Background(), req, challenge()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tok, err := store.Get(resource)
	if err != nil || tok == nil || tok.RefreshToken == "" || tok.Issuer != op.URL || tok.ProtectedResource != resource {
		t.Fatalf("stored %+v %v", tok, err)
	}
	if got, err := h.Token(context.Background()); err != nil || got.AccessToken != tok.AccessToken {
		t.Errorf("handler token %v %v", got, err)
	}
	if got := op.Resources("/authorize"); len(got) != 1 || got[0] != resource {
		t.Errorf("authorize resource %q", got)
	}

	// Expired: a handler of a later command refreshes it and saves the
	// rotated refresh token; the refresh request names the resource too.
	tok.Expiry = time.Now().Add(-time.Minute)
	store.Put(tok)
	h2, _ := oauth.New(resource, &oauth.Options{Store: store})
	nt, err := h2.Token(context.Background())
	if err != nil || nt.AccessToken == tok.AccessToken {
		t.Fatalf("refresh: %v %v", nt, err)
	}
	if saved, _ := store.Get(resource); saved.RefreshToken == tok.RefreshToken || saved.AccessToken != nt.AccessToken {
		t.Error("the rotated refresh token was not saved")
	}
	if got := op.Resources("/oauth/token"); len(got) != 2 || got[1] != resource {
		t.Errorf("token request resources %q", got)
	}
}

// protectedResource is a resource's metadata naming a real provider as its
// authorization server; challenge is its 401.
func protectedResource(t *testing.T) (string, *oidctest.OP, func() *http.Response) {
	var resource string
	var op *oidctest.OP
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-protected-resource/mcp" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": resource, "authorization_servers": []string{op.URL}, "scopes_supported": []string{"skills:read"}})
	}))
	t.Cleanup(srv.Close)
	resource = srv.URL + "/mcp"
	op = oidctest.Start(t, resource)
	return resource, op, func() *http.Response {
		return &http.Response{StatusCode: 401, Status: "401 Unauthorized", Body: io.NopCloser(strings.NewReader("")),
			Header: http.Header{"Www-Authenticate": {`Bearer resource_metadata="` + srv.URL + `/.well-known/oauth-protected-resource/mcp", scope="skills:read"`}}}
	}
}

// TestPastedRedirect: the browser runs on another machine, so the
// redirect to this one's loopback listener fails there; the person pastes
// its URL, after a line that is not it.
func TestPastedRedirect(t *testing.T) {
	resource, op, challenge := protectedResource(t)
	errR, errW := io.Pipe()
	pasteR, pasteW := io.Pipe()
	defer errW.Close()
	defer pasteW.Close()
	remote := op.RemoteBrowser(t)
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			if u := regexp.MustCompile(`https?://\S+/authorize\?\S+`).FindString(sc.Text()); u != "" {
				go func() {
					redirect, err := remote(u)
					if err == nil {
						io.WriteString(pasteW, "what do I paste?\n"+redirect+"\n")
					}
					done <- err
				}()
			}
		}
		io.Copy(io.Discard, errR)
	}()
	store := oauth.NewStore(filepath.Join(t.TempDir(), "tokens.json"))
	h, err := oauth.New(resource, &oauth.Options{
		Store: store, ClientID: oidctest.CLIClient, Interactive: true, Stderr: errW, Paste: pasteR,
		Browser:      func(string) error { return oauth.ErrNoBrowser },
		LoginTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", resource, nil)
	if err := h.Authorize(context.Background(), req, challenge()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if tok, err := store.Get(resource); err != nil || tok == nil || tok.AccessToken == "" {
		t.Fatalf("stored %+v %v", tok, err)
	}
}
