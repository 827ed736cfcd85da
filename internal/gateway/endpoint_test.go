package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGatewayHTTPEndpoint checks that `gateway --http` is served through
// the shared endpoint: /healthz, /readyz once discovery is done, /metrics,
// and a foreign Origin refused unless --allow-origin names it.
func TestGatewayHTTPEndpoint(t *testing.T) {
	mcpURL := gatewayHTTP(t, peerConfig(t, "docs"), "--allow-origin", "https://app.example.com")
	base := strings.TrimSuffix(mcpURL, "/mcp")
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 {
		t.Errorf("/healthz: %d %q", code, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get("/readyz")
		if code == 200 {
			break
		}
		if code != 503 || !strings.Contains(body, "discovering") || time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "skillport_http_requests_total") {
		t.Errorf("/metrics: %d, no request counter", code)
	}
	for origin, want := range map[string]int{"http://evil.example": 403, "https://app.example.com": 200} {
		req, _ := http.NewRequest("POST", mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("initialize from %s: %s, want %d", origin, resp.Status, want)
		}
	}
}
