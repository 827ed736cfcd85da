package gateway_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/gateway"
)

func TestParseConfigUpstreamAuth(t *testing.T) {
	cfg, err := gateway.ParseConfig(filepath.Join("conf", "gateway.json"), []byte(`{"mcpServers": {
		"team": {"url": "https://skills.example.com/mcp", "auth": {"clientId": "gw", "clientSecretFile": "secret.txt", "scopes": ["skills:read"]}},
		"pub": {"url": "https://pub.example.com/mcp"},
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Auth["team"]
	if a == nil || a.ClientID != "gw" || a.ClientSecretFile != filepath.Join("conf", "secret.txt") || len(a.Scopes) != 1 || cfg.Auth["pub"] != nil {
		t.Errorf("auth %+v", cfg.Auth)
	}
	for _, tc := range []struct{ server, want string }{
		{`{"url": "https://s/mcp", "auth": {"clientId": "x", "clientSecret": "plain"}}`, "does not belong in the file"},
		{`{"url": "https://s/mcp", "auth": {"clientSecretEnv": "X"}}`, "needs clientId"},
		{`{"url": "https://s/mcp", "auth": {"clientId": "x", "clientSecretEnv": "X", "clientSecretFile": "f"}}`, "not both"},
		{`{"url": "https://s/mcp", "auth": {"clientID": "x"}}`, "unknown field"},
		{`{"url": "https://s/mcp", "auth": "token"}`, "must be an object"},
		{`{"command": "skillport", "auth": {"clientId": "x"}}`, "URL only"},
	} {
		_, err := gateway.ParseConfig("g.json", []byte(`{"mcpServers": {"s": `+tc.server+`}}`))
		if !errors.Is(err, gateway.ErrConfig) || !strings.Contains(err.Error(), `mcpServers["s"].auth`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.server, err, tc.want)
		}
	}
}
