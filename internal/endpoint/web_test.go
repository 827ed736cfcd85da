package endpoint_test

import (
	"net/http"
	"testing"
)

// TestServeWeb checks that `skillport serve --http` mounts the web catalog
// and the discovery document next to /mcp, and that --no-web leaves both
// out while MCP and /healthz stay.
func TestServeWeb(t *testing.T) {
	dir := skillTree(t, 3, 0)
	for _, tc := range []struct {
		flags []string
		want  int
	}{
		{nil, http.StatusOK},
		{[]string{"--no-web"}, http.StatusNotFound},
	} {
		p := startServe(t, dir, tc.flags...)
		for _, path := range []string{"/", "/.well-known/agent-skills/index.json", "/assets/app.js"} {
			resp, err := http.Get(p.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%v GET %s: %s, want %d", tc.flags, path, resp.Status, tc.want)
			}
		}
		resp, err := http.Get(p.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%v /healthz: %s", tc.flags, resp.Status)
		}
	}
}
