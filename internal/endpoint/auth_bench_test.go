package endpoint_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/oidctest"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// benchEndpoint serves authTree: open, behind auth, or behind auth and the
// visibility rules.
func benchEndpoint(b *testing.B, o *oidctest.OP, auth, rules bool) *testServer {
	b.Helper()
	discard := slog.New(slog.DiscardHandler)
	cat, err := catalog.OpenDir(authTree(b), &catalog.Options{Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	src := published.NewCatalogSource(cat)
	var s published.Source = src
	if rules {
		r, err := access.Parse("rules.jsonc", []byte(authRules))
		if err != nil {
			b.Fatal(err)
		}
		s = access.Filter(src, r.Visible)
	}
	ms, _, err := skillserver.New(&mcp.Implementation{Name: "bench", Version: "0"}, s, &skillserver.Options{Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &mcp.StreamableHTTPOptions{Logger: discard})
	opts := endpoint.Options{Logger: discard}
	if auth {
		a, err := endpoint.NewAuth(b.Context(), endpoint.AuthOptions{Issuer: o.URL, Audience: testAudience, Scopes: []string{"skills:read"}})
		if err != nil {
			b.Fatal(err)
		}
		opts.Auth = a
	}
	return serveHandler(b, h, src, opts)
}

// BenchmarkAuthRead measures resources/read of one SKILL.md by 32
// concurrent clients (each its own session and token, on keep-alive
// connections) against the same catalog served without auth, with bearer
// token verification (JWKS cached) and with verification plus the
// visibility rules. Each iteration reads 32×50 times from each setup, in
// ten interleaved rounds, so the three share the machine's conditions; it
// reports the mean latency of each and the ratios to the unauthenticated
// baseline (target ≤ 1.10 for auth; "rules" is auth plus the visibility
// rules). Verified tokens are cached, so signature checking is paid once
// per token, not per request.
func BenchmarkAuthRead(b *testing.B) {
	const clients, reads, rounds = 32, 50, 10
	o := oidctest.Start(b, testAudience)
	type setup struct {
		name        string
		ts          *testServer
		hdrs        []map[string]string
		spent       time.Duration
		auth, rules bool
	}
	setups := []*setup{{name: "none"}, {name: "auth", auth: true}, {name: "rules", auth: true, rules: true}}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	do := func(url, body string, h map[string]string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			b.Error(err)
			return nil, nil
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp, out
	}
	for _, s := range setups {
		s.ts = benchEndpoint(b, o, s.auth, s.rules)
		for range clients {
			h := map[string]string{"MCP-Protocol-Version": "2025-11-25"}
			if s.auth {
				h["Authorization"] = "Bearer " + o.Token(b, "alice", "skills:read")
			}
			resp, body := do(s.ts.URL, initBody, h)
			if resp == nil || resp.StatusCode != 200 {
				b.Fatalf("%s: initialize: %v %s", s.name, resp, body)
			}
			h["Mcp-Session-Id"] = resp.Header.Get("Mcp-Session-Id")
			do(s.ts.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h)
			s.hdrs = append(s.hdrs, h)
		}
	}
	const read = `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"skill://public/hello/SKILL.md"}}`
	b.ResetTimer()
	for i := range b.N * rounds {
		// Setups take turns in small rounds, in rotating order, so that the
		// load of anything else on the machine falls on all three alike.
		for j := range setups {
			s := setups[(i+j)%len(setups)]
			start := time.Now()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Go(func() {
					for range reads / rounds {
						resp, body := do(s.ts.URL, read, s.hdrs[c])
						if resp == nil || resp.StatusCode != 200 || !bytes.Contains(body, []byte("# Hello")) {
							b.Errorf("%s: resources/read: %v %s", s.name, resp, body)
							return
						}
					}
				})
			}
			wg.Wait()
			s.spent += time.Since(start)
		}
	}
	b.StopTimer()
	per := func(s *setup) float64 { return float64(s.spent.Microseconds()) / float64(b.N*clients*reads) * clients }
	for _, s := range setups {
		b.ReportMetric(per(s), fmt.Sprintf("%s-us/read", s.name))
	}
	b.ReportMetric(per(setups[1])/per(setups[0]), "auth-ratio")
	b.ReportMetric(per(setups[2])/per(setups[0]), "rules-ratio")
}
