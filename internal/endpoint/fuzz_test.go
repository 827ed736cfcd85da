package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzOrigin: any Origin header value is either refused or normalised to
// a fixed point, and never panics the check.
func FuzzOrigin(f *testing.F) {
	for _, s := range []string{"http://evil.example", "null", "https://App.Example.com:443", "http://[::1]:3000", "http://localhost", "http://a@b", "https://x/y?z", "%zz", "http://[::1"} {
		f.Add(s)
	}
	e, err := New(http.NotFoundHandler(), &Options{AllowOrigins: []string{"https://app.example.com"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		if n, err := ParseOrigin(origin); err == nil {
			if n2, err := ParseOrigin(n); err != nil || n2 != n {
				t.Errorf("ParseOrigin(%q) = %q, which normalises to %q, %v", origin, n, n2, err)
			}
		}
		r := httptest.NewRequest("POST", "http://127.0.0.1:1/mcp", nil)
		e.originAllowed(r, origin)
	})
}

// FuzzServeMCP: whatever the body, the MCP handler sees exactly it or
// nothing; batches and bodies over the cap never reach it, and every
// refusal is a JSON-RPC error.
func FuzzServeMCP(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, " \n[", "", "{", strings.Repeat("x", 300), `{"method":7}`} {
		f.Add([]byte(s))
	}
	var got []byte
	reached := false
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = true
		got, _ = io.ReadAll(r.Body)
	})
	e, err := New(inner, &Options{MaxBodyBytes: 256, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		reached, got = false, nil
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest("POST", "http://127.0.0.1:1/mcp", bytes.NewReader(body)))
		isBatch := len(bytes.TrimLeft(body, " \t\r\n")) > 0 && bytes.TrimLeft(body, " \t\r\n")[0] == '['
		switch {
		case len(body) > 256 || isBatch:
			if reached {
				t.Fatalf("a %d-byte body (batch %v) reached the MCP handler", len(body), isBatch)
			}
			if !bytes.Contains(w.Body.Bytes(), []byte(`"error":{"code":-32600`)) {
				t.Fatalf("refusal %d %q is not a JSON-RPC error", w.Code, w.Body)
			}
		case !reached || !bytes.Equal(got, body):
			t.Fatalf("the MCP handler got %q (reached %v), want %q", got, reached, body)
		}
	})
}

// FuzzRequestID: whatever an unauthenticated body holds, the id a refusal
// answers is the body's JSON-RPC id or null, and the refusal is JSON.
func FuzzRequestID(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"id":"a"}`, `{"id":1.5}`, `{"id":{}}`, `[{"id":1}]`, "", "{", `{"id":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "http://127.0.0.1:1/mcp", bytes.NewReader(body))
		w := httptest.NewRecorder()
		writeErrorID(w, http.StatusUnauthorized, requestID(r), "refused")
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" || len(msg.ID) == 0 {
			t.Fatalf("refusal %q: not a JSON-RPC error with an id member (%v)", w.Body, err)
		}
	})
}

// FuzzHost: any --allow-host value is refused or normalised to a fixed
// point without scheme, path or port; and a request on loopback naming any
// Host is served only for a loopback name or an allowed one.
func FuzzHost(f *testing.F) {
	for _, s := range []string{"skills.example.com", "Skills.Example.com:443", "https://x", "[::1]", "[::1]:80", "127.0.0.1", "*.x", "a:b:c", ""} {
		f.Add(s)
	}
	e, err := New(http.NotFoundHandler(), &Options{AllowHosts: []string{"skills.example.com"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if h, err := ParseHost(s); err == nil {
			if again, err := ParseHost(h); err != nil || again != h || strings.ContainsAny(h, "/@?# ") {
				t.Fatalf("ParseHost(%q) = %q, which parses as %q (%v)", s, h, again, err)
			}
		}
		r := httptest.NewRequest("GET", "http://127.0.0.1:1/", nil)
		r.Host = s
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}))
		host, ok := e.hostAllowed(r)
		if ok != (isLoopback(host) || host == "skills.example.com") {
			t.Fatalf("Host %q (%q) on loopback: allowed %v", s, host, ok)
		}
	})
}
