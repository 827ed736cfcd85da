package host_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/host"
)

func TestDiscoverMCP(t *testing.T) {
	const schema = `"$schema":"https://schemas.agentskills.io/discovery/0.2.0/schema.json"`
	for _, tc := range []struct {
		name    string
		body    string
		headers map[string]string
		want    string // MCP URL suffix, or error text
		fail    bool
	}{
		{"relative", `{` + schema + `,"skills":[],"mcp":"/mcp"}`, nil, "/mcp", false},
		{"absolute elsewhere", `{` + schema + `,"skills":[],"mcp":"https://mcp.example.com/x"}`, nil, "https://mcp.example.com/x", false},
		{"elsewhere with headers", `{` + schema + `,"skills":[],"mcp":"https://mcp.example.com/x"}`, map[string]string{"Authorization": "Bearer t"}, "another origin", true},
		{"no mcp", `{` + schema + `,"skills":[]}`, nil, `names no MCP endpoint`, true},
		{"javascript mcp", `{` + schema + `,"skills":[],"mcp":"javascript:alert(1)"}`, nil, "not an http(s) URL", true},
		{"wrong schema", `{"$schema":"https://example.com/other","skills":[],"mcp":"/mcp"}`, nil, "$schema", true},
		{"not json", `<html>`, nil, "not a discovery document", true},
		{"too large", `{` + schema + `,"skills":[],"pad":"` + strings.Repeat("x", host.MaxDiscoveryBytes) + `"}`, nil, "larger than", true},
	} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/.well-known/agent-skills/index.json" {
				http.NotFound(w, r)
				return
			}
			w.Write([]byte(tc.body))
		}))
		got, err := host.DiscoverMCP(context.Background(), nil, ts.URL, tc.headers)
		ts.Close()
		switch {
		case tc.fail && (err == nil || !errors.Is(err, host.ErrDiscovery) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/.well-known/agent-skills/index.json")):
			t.Errorf("%s: %q, %v; want an error containing %q and the document's URL", tc.name, got, err, tc.want)
		case !tc.fail && (err != nil || !strings.HasSuffix(got, tc.want)):
			t.Errorf("%s: %q, %v; want ...%s", tc.name, got, err, tc.want)
		}
	}
	for u, want := range map[string]bool{"https://example.com": true, "https://example.com/": true, "https://example.com/mcp": false,
		"http://127.0.0.1:8080": true, "ftp://example.com": false, "https://example.com/?x=1": false} {
		if host.IsSiteURL(u) != want {
			t.Errorf("IsSiteURL(%q) = %v", u, !want)
		}
	}
}

// A server answering at its root streams events to any GET; discovery must
// say so at once (ErrNoDiscovery) instead of reading the endless body.
func TestDiscoverMCPEventStream(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer ts.Close()
	start := time.Now()
	_, err := host.DiscoverMCP(context.Background(), &http.Client{Timeout: 30 * time.Second}, ts.URL, nil)
	if !errors.Is(err, host.ErrNoDiscovery) || !errors.Is(err, host.ErrDiscovery) {
		t.Fatalf("err = %v, want ErrNoDiscovery", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v: the stream was read", d)
	}
}
