package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseChallenge(t *testing.T) {
	for _, tc := range []struct {
		headers []string
		want    Challenge
		err     string
	}{
		{[]string{`Bearer resource_metadata="https://s.example/.well-known/oauth-protected-resource/mcp", scope="a b", error="insufficient_scope", error_description="needs b"`},
			Challenge{ResourceMetadata: "https://s.example/.well-known/oauth-protected-resource/mcp", Scopes: []string{"a", "b"}, Error: "insufficient_scope", ErrorDescription: "needs b"}, ""},
		{[]string{`Basic realm="x"`, `Bearer scope="read"`}, Challenge{Scopes: []string{"read"}}, ""},
		{nil, Challenge{}, ""},
		{[]string{`Bearer resource_metadata="javascript:alert(1)"`}, Challenge{}, "not an http(s) URL"},
		{[]string{`Bearer resource_metadata="unterminated`}, Challenge{}, "WWW-Authenticate"},
		{[]string{"Bearer scope=\"" + strings.Repeat("s ", MaxChallengeBytes) + "\""}, Challenge{}, "more than the"},
	} {
		got, err := ParseChallenge(tc.headers)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.headers, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(*got) != fmt.Sprint(tc.want) {
			t.Errorf("%q: %+v %v, want %+v", tc.headers, got, err, tc.want)
		}
	}
}

// metadataServer is an MCP server's metadata and an authorization
// server's, on one loopback server; prm and asm are the documents served
// (nil: 404).
func metadataServer(t *testing.T, prm, asm func(base string) any) string {
	t.Helper()
	var base string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var doc any
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			if prm != nil {
				doc = prm(base)
			}
		case "/.well-known/oauth-authorization-server/as", "/.well-known/openid-configuration/as":
			if asm != nil {
				doc = asm(base)
			}
		}
		if doc == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	base = srv.URL
	return base
}

func TestDiscover(t *testing.T) {
	goodPRM := func(b string) any {
		return map[string]any{"resource": b + "/mcp", "authorization_servers": []string{b + "/as"}, "scopes_supported": []string{"skills:read"}}
	}
	goodASM := func(b string) any {
		return map[string]any{"issuer": b + "/as", "authorization_endpoint": b + "/as/authorize", "token_endpoint": b + "/as/token", "response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"}}
	}
	ctx := context.Background()
	c := &http.Client{Timeout: 5 * time.Second}

	base := metadataServer(t, goodPRM, goodASM)
	d, err := Discover(ctx, c, base+"/mcp", nil)
	if err != nil || d.AuthServer.TokenEndpoint != base+"/as/token" || d.MetadataURL != base+"/.well-known/oauth-protected-resource/mcp" {
		t.Fatalf("well-known discovery: %+v %v", d, err)
	}

	// The metadata of another resource is refused, naming it.
	base = metadataServer(t, func(b string) any {
		return map[string]any{"resource": "https://elsewhere.example/mcp", "authorization_servers": []string{b + "/as"}}
	}, goodASM)
	if _, err := Discover(ctx, c, base+"/mcp", &Challenge{ResourceMetadata: base + "/.well-known/oauth-protected-resource/mcp"}); err == nil || !strings.Contains(err.Error(), "elsewhere.example") {
		t.Errorf("resource mismatch: %v", err)
	}
	// No authorization servers.
	base = metadataServer(t, func(string) any { return map[string]any{"resource": "x"} }, goodASM)
	if _, err := Discover(ctx, c, base+"/mcp", &Challenge{ResourceMetadata: base + "/.well-known/oauth-protected-resource/mcp"}); err == nil {
		t.Error("metadata of another resource accepted")
	}
	// An authorization server without metadata, named by the server.
	base = metadataServer(t, goodPRM, nil)
	if _, err := Discover(ctx, c, base+"/mcp", nil); err == nil || !strings.Contains(err.Error(), base+"/as") {
		t.Errorf("no AS metadata: %v", err)
	}
	// Metadata larger than the SDK's 1 MiB bound.
	base = metadataServer(t, func(b string) any {
		return map[string]any{"resource": b + "/mcp", "authorization_servers": []string{b + "/as"}, "pad": strings.Repeat("x", 2<<20)}
	}, goodASM)
	if _, err := Discover(ctx, c, base+"/mcp", &Challenge{ResourceMetadata: base + "/.well-known/oauth-protected-resource/mcp"}); err == nil {
		t.Error("a 2 MiB metadata document was accepted")
	}
	// A server that never answers: the client's timeout, naming the URL.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	short := &http.Client{Timeout: 200 * time.Millisecond}
	if _, err := Discover(ctx, short, hang.URL+"/mcp", &Challenge{ResourceMetadata: hang.URL + "/.well-known/oauth-protected-resource/mcp"}); err == nil || !strings.Contains(err.Error(), hang.URL) {
		t.Errorf("hanging metadata: %v", err)
	}
}

func TestStore(t *testing.T) {
	p := filepath.Join(t.TempDir(), "skillport", "tokens.json")
	s := NewStore(p)
	if tok, err := s.Get("https://a/mcp"); tok != nil || err != nil {
		t.Fatalf("empty store: %v %v", tok, err)
	}
	for _, r := range []string{"https://a/mcp", "https://b/mcp"} {
		if err := s.Put(&Token{Resource: r, AccessToken: "at-" + r, RefreshToken: "rt"}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(p)
	if err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Fatalf("tokens file: %v %v", fi.Mode(), err)
	}
	if d, _ := os.Stat(filepath.Dir(p)); runtime.GOOS != "windows" && d.Mode().Perm() != 0o700 {
		t.Errorf("tokens directory mode %v", d.Mode())
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].Resource != "https://a/mcp" {
		t.Fatalf("list: %v %v", list, err)
	}
	// A second store on the same file (another command) sees and keeps
	// the first's tokens.
	if err := NewStore(p).Put(&Token{Resource: "https://c/mcp"}); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(); len(list) != 3 {
		t.Errorf("after another store's write: %d tokens", len(list))
	}
	if ok, err := s.Delete("https://a/mcp"); !ok || err != nil {
		t.Errorf("delete: %v %v", ok, err)
	}
	if ok, _ := s.Delete("https://a/mcp"); ok {
		t.Error("deleted twice")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".tokens-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	if runtime.GOOS != "windows" {
		os.Chmod(p, 0o640)
		_, err := s.Get("https://b/mcp")
		if !errors.Is(err, ErrInsecureStore) || !strings.Contains(err.Error(), "chmod 600 "+p) {
			t.Errorf("group-readable file: %v", err)
		}
		if err := s.Put(&Token{Resource: "x"}); !errors.Is(err, ErrInsecureStore) {
			t.Errorf("write to a group-readable file: %v", err)
		}
		// A handler sends no token from such a file, and reports it on
		// the server's 401.
		h, _ := New("https://b/mcp", &Options{Store: s})
		if ts, err := h.TokenSource(context.Background()); ts != nil || err != nil {
			t.Errorf("token source from a group-readable file: %v %v", ts, err)
		}
		req, _ := http.NewRequest("POST", "https://b/mcp", nil)
		resp := &http.Response{StatusCode: 401, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}
		if err := h.Authorize(context.Background(), req, resp); !errors.Is(err, ErrInsecureStore) {
			t.Errorf("401 with a group-readable file: %v", err)
		}
		os.Chmod(p, 0o600)
	}
	os.WriteFile(p, []byte("{not json"), 0o600)
	if _, err := s.Get("x"); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("corrupt file: %v", err)
	}
	os.WriteFile(p, make([]byte, MaxStoreBytes+1), 0o600)
	if _, err := s.Get("x"); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("oversized file: %v", err)
	}
}

func TestLoopback(t *testing.T) {
	lb, err := newLoopback()
	if err != nil {
		t.Fatal(err)
	}
	defer lb.close()
	if !strings.HasPrefix(lb.url, "http://127.0.0.1:") {
		t.Fatalf("redirect %s is not on 127.0.0.1", lb.url)
	}
	lb.expect("s1")
	get := func(q string) int {
		resp, err := http.Get(lb.url + q)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// A wrong state neither ends nor spoils the sign-in.
	if code := get("?code=evil&state=other"); code != http.StatusBadRequest {
		t.Errorf("wrong state: %d", code)
	}
	if code := get("?code=good&state=s1"); code != http.StatusOK {
		t.Errorf("right state: %d", code)
	}
	// One request: the next is refused.
	if code := get("?code=again&state=s1"); code != http.StatusGone {
		t.Errorf("second answer: %d", code)
	}
	res, err := lb.wait(context.Background(), time.Second)
	if err != nil || res.Code != "good" || res.State != "s1" {
		t.Errorf("result %+v %v", res, err)
	}

	lb2, _ := newLoopback()
	defer lb2.close()
	lb2.expect("s2")
	go http.Get(lb2.url + "?error=access_denied&error_description=no&state=s2")
	if _, err := lb2.wait(context.Background(), 5*time.Second); err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Errorf("refused sign-in: %v", err)
	}
	lb3, _ := newLoopback()
	defer lb3.close()
	if _, err := lb3.wait(context.Background(), 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("timeout: %v", err)
	}
}

func TestLoginRequired(t *testing.T) {
	h, err := New("https://s.example/mcp", &Options{Store: NewStore(filepath.Join(t.TempDir(), "t.json"))})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "https://s.example/mcp", nil)
	resp := &http.Response{StatusCode: 401, Status: "401 Unauthorized", Header: http.Header{"Www-Authenticate": {`Bearer error="invalid_token"`}}, Body: io.NopCloser(strings.NewReader(""))}
	err = h.Authorize(context.Background(), req, resp)
	var lr *LoginRequiredError
	if !errors.As(err, &lr) || !strings.Contains(err.Error(), "run: skillport auth login https://s.example/mcp") {
		t.Errorf("non-interactive 401: %v", err)
	}
	resp = &http.Response{StatusCode: 403, Status: "403 Forbidden", Header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="skills:internal"`}}, Body: io.NopCloser(strings.NewReader(""))}
	req.Header.Set("Authorization", "Bearer t")
	if err := h.Authorize(context.Background(), req, resp); !errors.As(err, &lr) || !strings.Contains(err.Error(), "lacks scope skills:internal") || !strings.Contains(err.Error(), "run: skillport auth login --scope skills:internal https://s.example/mcp") {
		t.Errorf("non-interactive 403 insufficient_scope: %v", err)
	}
	for _, o := range []*Options{{ClientCredentials: true, ClientID: "x"}, {ClientMetadataURL: "http://insecure.example/c.json"}, {ClientMetadataURL: "https://root.example/"}} {
		if _, err := New("https://s.example/mcp", o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := New("file:///etc/passwd", nil); err == nil {
		t.Error("a file URL accepted as a server")
	}
}

func TestResourceParamBound(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		got = r.Form.Get("resource")
	}))
	defer srv.Close()
	rp := &resourceParam{tokenURL: srv.URL + "/token", resource: "https://s.example/mcp", next: http.DefaultTransport}
	c := &http.Client{Transport: rp}
	resp, err := c.Post(srv.URL+"/token", "application/x-www-form-urlencoded", strings.NewReader("grant_type=refresh_token&refresh_token=r"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got != "https://s.example/mcp" {
		t.Errorf("resource %q", got)
	}
	if _, err := c.Post(srv.URL+"/token", "application/x-www-form-urlencoded", strings.NewReader(strings.Repeat("a", MaxTokenRequestBytes+1))); err == nil {
		t.Error("an oversized token request was sent")
	}
}

func TestReadPasted(t *testing.T) {
	lb, _ := newLoopback()
	defer lb.close()
	lb.expect("s")
	var out strings.Builder
	lb.readPasted(strings.NewReader("not a url\n"+lb.url+"?code=evil&state=other\n"+lb.url+"?code=c&state=s\n"), &out)
	res, err := lb.wait(context.Background(), time.Second)
	if err != nil || res.Code != "c" || !strings.Contains(out.String(), "does not match") || !strings.Contains(out.String(), "not the redirected URL") {
		t.Errorf("pasted: %+v %v %q", res, err, out.String())
	}

	// A line longer than MaxPastedBytes ends the reading; the sign-in
	// still waits for the browser.
	lb2, _ := newLoopback()
	defer lb2.close()
	lb2.expect("s")
	lb2.readPasted(strings.NewReader(strings.Repeat("a", MaxPastedBytes+1)+"\n"+lb2.url+"?code=c&state=s\n"), io.Discard)
	if _, err := lb2.wait(context.Background(), 50*time.Millisecond); err == nil {
		t.Error("a line past an oversized one was read")
	}
}
