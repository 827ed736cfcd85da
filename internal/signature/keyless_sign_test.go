package signature

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/oidctest"
	"github.com/skillport/skillport/internal/sigstoretest"
)

// TestKeylessSign signs keylessly against the test Fulcio and Rekor with
// an ID token of a real OpenID provider, and verifies the bundles offline
// with the test Sigstore's trusted root: one certificate for the run, one
// log entry per skill; a policy naming another subject or issuer refuses.
func TestKeylessSign(t *testing.T) {
	op := oidctest.Start(t, sigstoretest.Audience)
	ss := sigstoretest.Start(t, op.URL)
	s, err := NewKeylessSigner(context.Background(), KeylessOptions{IDToken: sigstoretest.IDToken(t, op, "release@acme.example"), FulcioURL: ss.FulcioURL, RekorURL: ss.RekorURL})
	if err != nil {
		t.Fatal(err)
	}
	if id := s.Identity(); id.Subject != "release@acme.example" || id.Issuer != op.URL {
		t.Fatalf("identity %+v", id)
	}
	sets := []*Set{sampleSet("skill://acme/pdf/SKILL.md"), sampleSet("skill://acme/docx/SKILL.md")}
	var bundles [][]byte
	for _, set := range sets {
		b, err := s.Sign(set)
		if err != nil {
			t.Fatal(err)
		}
		bundles = append(bundles, b)
	}
	if ss.Certificates() != 1 || ss.Entries() != 2 {
		t.Errorf("%d certificates, %d log entries; want 1 and 2", ss.Certificates(), ss.Entries())
	}
	rootJSON := ss.TrustedRoot(t)
	v := mustVerifier(t, Trust{Root: rootJSON, Keyless: []Keyless{{Issuer: op.URL, Subject: `release@acme\.example`}}})
	for i, set := range sets {
		id, err := v.Verify(set, bundles[i])
		if err != nil || id != s.Identity() {
			t.Errorf("%s: %+v %v", set.URI, id, err)
		}
	}
	for _, tc := range []struct {
		name string
		v    *Verifier
		set  *Set
		want string
	}{
		{"another subject", mustVerifier(t, Trust{Root: rootJSON, Keyless: []Keyless{{Issuer: op.URL, Subject: `ci@acme\.example`}}}), sets[0], "which the trust policy does not allow"},
		{"another issuer", mustVerifier(t, Trust{Root: rootJSON, Keyless: []Keyless{{Issuer: "https://token.actions.githubusercontent.com", Subject: ".*"}}}), sets[0], "which the trust policy does not allow"},
		{"another skill", v, sets[1], "a signature moved to another skill"},
		{"another Sigstore", mustVerifier(t, Trust{Root: sigstoretest.Start(t, op.URL).TrustedRoot(t), Keyless: []Keyless{{Issuer: op.URL, Subject: ".*"}}}), sets[0], "bad signature"},
	} {
		if _, err := tc.v.Verify(tc.set, bundles[0]); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestKeylessSignErrors: each failure is one line naming the service and
// what to do.
func TestKeylessSignErrors(t *testing.T) {
	op := oidctest.Start(t, sigstoretest.Audience)
	ss := sigstoretest.Start(t, op.URL)
	other := oidctest.Start(t, sigstoretest.Audience) // an issuer the test Fulcio does not accept
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		u := "http://" + l.Addr().String()
		l.Close()
		return u
	}()
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for the handler
	good := sigstoretest.IDToken(t, op, "release@acme.example")
	for _, tc := range []struct {
		name          string
		token         string
		fulcio, rekor string
		timeout       time.Duration
		want          []string
		signToo       bool
	}{
		{name: "not a JWT", token: "not-a-token", want: []string{"the ID token is not a signed JWT"}},
		{name: "expired", token: op.Token(t, "expired"), want: []string{"the ID token expired at", "get a fresh one"}},
		{name: "wrong audience", token: op.Token(t, "other"), want: []string{"Fulcio at " + ss.FulcioURL, "HTTP 401", `audience is "https://elsewhere.test/mcp", not "sigstore"`}},
		{name: "issuer Fulcio does not accept", token: sigstoretest.IDToken(t, other, "a@b.example"), want: []string{"Fulcio at", "HTTP 401", "check that Fulcio accepts tokens of the issuer " + other.URL}},
		{name: "Fulcio unreachable", token: good, fulcio: closed, want: []string{"keyless: Fulcio at " + closed + ": cannot connect", "check --fulcio-url"}},
		{name: "Fulcio hangs", token: good, fulcio: hung.URL, timeout: 300 * time.Millisecond, want: []string{"Fulcio at " + hung.URL + ": no answer within 300ms", "raise --sigstore-timeout"}},
		{name: "Fulcio over plain HTTP", token: good, fulcio: "http://fulcio.example", want: []string{"keyless: --fulcio-url http://fulcio.example would reach Fulcio over plain HTTP; use https"}},
		{name: "Rekor not a URL", token: good, rekor: "rekor.example", want: []string{"keyless: --rekor-url rekor.example is not an http(s) URL (e.g. https://rekor.sigstore.dev)"}},
		{name: "Rekor unreachable", token: good, rekor: closed, signToo: true, want: []string{"keyless: Rekor at " + closed, "check --rekor-url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := KeylessOptions{IDToken: tc.token, FulcioURL: ss.FulcioURL, RekorURL: ss.RekorURL, Timeout: tc.timeout}
			if tc.fulcio != "" {
				o.FulcioURL = tc.fulcio
			}
			if tc.rekor != "" {
				o.RekorURL = tc.rekor
			}
			s, err := NewKeylessSigner(context.Background(), o)
			if tc.signToo {
				if err != nil {
					t.Fatal(err)
				}
				_, err = s.Sign(sampleSet("skill://acme/pdf/SKILL.md"))
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			t.Log(msg)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("not one line: %q", msg)
			}
		})
	}
}

// TestEnvIDToken: $SIGSTORE_ID_TOKEN first, else GitHub Actions' token
// endpoint asked for the audience sigstore with its request token.
func TestEnvIDToken(t *testing.T) {
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer endless" {
			for range 2 * MaxIDTokenBytes / 1024 {
				w.Write([]byte(strings.Repeat("x", 1024)))
			}
			return
		}
		if r.Header.Get("Authorization") != "Bearer request-token" {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusForbidden)
			return
		}
		w.Write([]byte(`{"count":1,"value":"tok-for-` + r.URL.Query().Get("audience") + `"}`))
	}))
	t.Cleanup(gh.Close)
	for _, tc := range []struct {
		name      string
		env       map[string]string
		tok, from string
		err       string
	}{
		{"nothing", nil, "", "", ""},
		{"SIGSTORE_ID_TOKEN", map[string]string{EnvIDToken: " a.b.c\n", EnvActionsRequestURL: gh.URL, EnvActionsRequestTok: "request-token"}, "a.b.c", "$SIGSTORE_ID_TOKEN", ""},
		{"GitHub Actions", map[string]string{EnvActionsRequestURL: gh.URL + "/?api-version=2.0", EnvActionsRequestTok: "request-token"}, "tok-for-sigstore", "GitHub Actions ($ACTIONS_ID_TOKEN_REQUEST_URL)", ""},
		{"only the URL", map[string]string{EnvActionsRequestURL: gh.URL}, "", "", ""},
		{"a token over the limit", map[string]string{EnvIDToken: strings.Repeat("a", MaxIDTokenBytes+1)}, "", "", "$SIGSTORE_ID_TOKEN is over the 65536-byte limit"},
		{"an answer over the limit", map[string]string{EnvActionsRequestURL: gh.URL, EnvActionsRequestTok: "endless"}, "", "", "sent over 65536 bytes"},
		{"plain HTTP", map[string]string{EnvActionsRequestURL: "http://actions.example/token", EnvActionsRequestTok: "request-token"}, "", "", "would send $ACTIONS_ID_TOKEN_REQUEST_TOKEN over plain HTTP to actions.example; it must be https"},
		{"refused", map[string]string{EnvActionsRequestURL: gh.URL, EnvActionsRequestTok: "wrong"}, "", "", `answered 403 Forbidden ({"message":"Bad credentials"}); the job needs "permissions: id-token: write"`},
	} {
		getenv := func(k string) string { return tc.env[k] }
		tok, from, err := EnvIDTokenSource(context.Background(), getenv, time.Second)
		if tok != tc.tok || from != tc.from || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %q %q %v", tc.name, tok, from, err)
		}
		if IDTokenOffered(getenv) != (tc.tok != "" || tc.err != "") {
			t.Errorf("%s: IDTokenOffered %v", tc.name, IDTokenOffered(getenv))
		}
	}
}

// TestKeylessRenews: a certificate near its end (Fulcio's live 10
// minutes) is replaced before the next signature, so that no log entry is
// integrated after its certificate expired; the bundles verify.
func TestKeylessRenews(t *testing.T) {
	op := oidctest.Start(t, sigstoretest.Audience)
	ss := sigstoretest.Start(t, op.URL)
	ss.CertAge = 9 * time.Minute // a minute left: under renewBefore
	s, err := NewKeylessSigner(context.Background(), KeylessOptions{IDToken: sigstoretest.IDToken(t, op, "release@acme.example"), FulcioURL: ss.FulcioURL, RekorURL: ss.RekorURL})
	if err != nil {
		t.Fatal(err)
	}
	v := mustVerifier(t, Trust{Root: ss.TrustedRoot(t), Keyless: []Keyless{{Issuer: op.URL, Subject: `release@acme\.example`}}})
	for _, uri := range []string{"skill://acme/pdf/SKILL.md", "skill://acme/docx/SKILL.md"} {
		set := sampleSet(uri)
		b, err := s.Sign(set)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(set, b); err != nil {
			t.Errorf("%s: %v", uri, err)
		}
	}
	if ss.Certificates() != 3 {
		t.Errorf("%d certificates, want 3 (the first, and one per signature)", ss.Certificates())
	}
}

// FuzzReadClaims: any token gives claims or a one-line error, never a
// panic.
func FuzzReadClaims(f *testing.F) {
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2EiLCJhdWQiOlsic2lnc3RvcmUiXSwiZXhwIjoxfQ.c2ln")
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := readClaims(tok)
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("not one line: %q", err)
		}
		_ = c.expired(time.Now())
	})
}
