package endpoint_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestHostPolicy: one Host and Origin policy for every route of
// `skillport serve --http` on loopback: a request naming a foreign Host
// (a DNS-rebinding read of a local server) or sent from a foreign web
// Origin is refused on the web catalog, the discovery document, the
// archives, the metrics and the health checks as on /mcp; localhost
// names are served, and --allow-host adds a public name.
func TestHostPolicy(t *testing.T) {
	dir := skillTree(t, 2, 1024)
	routes := []struct{ method, path string }{
		{"GET", "/"},
		{"GET", "/s/skill-000"},
		{"GET", "/s/skill-000/big.md"},
		{"GET", "/raw/skill-000/SKILL.md"},
		{"GET", "/archive/skill-000.tar.gz"},
		{"GET", "/.well-known/agent-skills/index.json"},
		{"GET", "/search.json"},
		{"GET", "/assets/app.js"},
		{"GET", "/metrics"},
		{"GET", "/healthz"},
		{"GET", "/readyz"},
		{"POST", "/mcp"},
	}
	plain := startServe(t, dir)
	public := startServe(t, dir, "--allow-host", "Skills.Example.com")
	port := plain.Addr[strings.LastIndex(plain.Addr, ":"):]
	for _, c := range []struct {
		name   string
		p      *process
		host   string
		origin string
		want   int // 0: anything but 403
	}{
		{"foreign host", plain, "attacker.example", "", 403},
		{"foreign host with port", plain, "attacker.example" + port, "", 403},
		{"foreign IP", plain, "10.1.2.3" + port, "", 403},
		{"localhost", plain, "localhost" + port, "", 0},
		{"loopback IP", plain, "127.0.0.1" + port, "", 0},
		{"loopback IPv6", plain, "[::1]" + port, "", 0},
		{"foreign origin", plain, "127.0.0.1" + port, "http://attacker.example", 403},
		{"own origin", plain, "127.0.0.1" + port, "http://127.0.0.1" + port, 0},
		{"allowed host", public, "skills.example.com", "", 0},
		{"allowed host with port", public, "SKILLS.example.com:443", "", 0},
		{"foreign host, list set", public, "attacker.example", "", 403},
	} {
		for _, r := range routes {
			var body *strings.Reader
			if r.method == "POST" {
				body = strings.NewReader(initBody)
			} else {
				body = strings.NewReader("")
			}
			req, err := http.NewRequest(r.method, c.p.URL+r.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = c.host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			switch {
			case c.want == 403 && resp.StatusCode != 403:
				t.Errorf("%s (Host %s, Origin %q): %s %s answered %s, want 403", c.name, c.host, c.origin, r.method, r.path, resp.Status)
			case c.want == 0 && resp.StatusCode >= 300:
				t.Errorf("%s (Host %s): %s %s answered %s, want it served", c.name, c.host, r.method, r.path, resp.Status)
			}
		}
	}
}
