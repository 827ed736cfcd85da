package endpoint_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// TestMethodLabels checks that every request is labelled with its
// JSON-RPC method whether the endpoint reads the body for the label
// itself (go-sdk's handler) or package skillserver's handler tells it the
// method it parsed (the thin read path, routing, the thin path turned
// off), so that a body is parsed once on its way: the endpoint parses
// none of the bodies skillserver's handler serves (the handler's side of
// the count: skillserver's TestOneParsePerRequest).
func TestMethodLabels(t *testing.T) {
	cat, err := catalog.OpenDir(skillTree(t, 3, 0), &catalog.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	src := published.NewCatalogSource(cat)
	s, srv, err := skillserver.New(&mcp.Implementation{Name: "test", Version: "0"}, src, &skillserver.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	_, slow, err := skillserver.New(&mcp.Implementation{Name: "test", Version: "0"}, src, &skillserver.Options{Logger: slog.New(slog.DiscardHandler), NoFastPath: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]http.Handler{
		"go-sdk":       mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)}),
		"server":       srv.HTTPHandler(&skillserver.HTTPOptions{Logger: slog.New(slog.DiscardHandler)}),
		"no-fast-path": slow.HTTPHandler(&skillserver.HTTPOptions{Logger: slog.New(slog.DiscardHandler)}),
	} {
		t.Run(name, func(t *testing.T) {
			ts := serveHandler(t, h, src, endpoint.Options{})
			sid := session(t, ts)
			hd := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
			for range 3 {
				post(t, ts, `{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}`, hd)
			}
			post(t, ts, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"skill://nope/SKILL.md"}}`, hd)
			post(t, ts, `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{}}`, hd)
			post(t, ts, `{"jsonrpc":"2.0","id":5,"method":"x/1","params":{}}`, nil)
			post(t, ts, `{"jsonrpc":"2.0","id":`, nil)
			post(t, ts, `{"jsonrpc":"2.0","id":6,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
				map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
			const posts = 10 // initialize and notifications/initialized included
			want := int64(0)
			if name == "go-sdk" {
				want = posts
			}
			if got := endpoint.BodyParses(ts.EP); got != want {
				t.Errorf("the endpoint parsed %d of %d bodies for its label, want %d", got, posts, want)
			}
			resp, err := http.Get(ts.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, m := range fams["skillport_http_requests_total"].GetMetric() {
				for _, l := range m.Label {
					if l.GetName() == "rpc_method" {
						got[l.GetValue()] += m.Counter.GetValue()
					}
				}
			}
			for method, want := range map[string]float64{"initialize": 1, "skills/list": 3, "resources/read": 1, "tools/list": 1, "other": 2, "none": 1} {
				if got[method] != want {
					t.Errorf("rpc_method %q: %v requests, want %v (all: %v)", method, got[method], want, got)
				}
			}
		})
	}
}
