package skillserver_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/skillserver"
)

// endpointLike stands for package endpoint in front of the handler, as
// its contract with the handler goes: it hands over the body it read
// whole (Buffered) and takes the JSON-RPC method for its metrics label
// (SetRPCMethod) rather than parsing the body itself. It records, per
// request, whether and how the handler labelled it.
type endpointLike struct {
	h      http.Handler
	mu     sync.Mutex
	labels []string // per POST: the label given, or "" when none was
}

type bufBody struct {
	*bytes.Reader
	data []byte
}

func (b *bufBody) Close() error     { return nil }
func (b *bufBody) Buffered() []byte { return b.data }

type labelRecorder struct {
	http.ResponseWriter
	label string
	n     int
}

func (l *labelRecorder) SetRPCMethod(method string, parsed bool) {
	l.n++
	l.label = method
	if !parsed {
		l.label = "<unparsed>"
	}
}

func (l *labelRecorder) Unwrap() http.ResponseWriter { return l.ResponseWriter }

func (e *endpointLike) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		e.h.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = &bufBody{Reader: bytes.NewReader(body), data: body}
	rec := &labelRecorder{ResponseWriter: w}
	e.h.ServeHTTP(rec, r)
	label := rec.label
	if rec.n != 1 {
		label = fmt.Sprintf("<labelled %d times>", rec.n)
	}
	e.mu.Lock()
	e.labels = append(e.labels, label)
	e.mu.Unlock()
}

func (e *endpointLike) last() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.labels) == 0 {
		return "<none>"
	}
	return e.labels[len(e.labels)-1]
}

// TestOneParsePerRequest: on every path a POST takes through the handler
// (the thin path answering, the thin path declining a 2026-07-28 request,
// a session of an older revision, a stateless server, the thin path
// turned off) the handler parses the body at most once, and, in front of
// package endpoint, labels the request's method itself, so that the
// endpoint does not parse it either (its own side: endpoint's
// TestParsesOnlyUnlabelled). go-sdk's decoding of a request it is handed
// is its own and not counted: its handler takes bytes, not a message.
func TestOneParsePerRequest(t *testing.T) {
	cat, err := catalog.OpenDir(examples, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	const file = "skill://pdf-processing/SKILL.md"
	for _, c := range []struct {
		name              string
		noFast, stateless bool
		front             bool // behind an endpointLike
	}{
		{"thin", false, false, true},
		{"thin-plain", false, false, false},
		{"no-fast-path", true, false, true},
		{"no-fast-path-plain", true, false, false},
		{"stateless", false, true, true},
		{"stateless-no-fast-path", true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, srv, err := skillserver.New(nil, skillserver.NewCatalogSource(cat), &skillserver.Options{Logger: discard, NoFastPath: c.noFast})
			if err != nil {
				t.Fatal(err)
			}
			h := srv.HTTPHandler(&skillserver.HTTPOptions{Logger: discard, Stateless: c.stateless})
			t.Cleanup(func() { h.Close() })
			front := &endpointLike{h: h}
			var served http.Handler = h
			if c.front {
				served = front
			}
			p := mount(t, served)
			check := func(what, wantLabel string, send func() reply) reply {
				t.Helper()
				before := skillserver.BodyParses(h)
				r := send()
				if n := skillserver.BodyParses(h) - before; n > 1 {
					t.Errorf("%s: the body was parsed %d times, want at most once", what, n)
				}
				if c.front {
					if got := front.last(); got != wantLabel {
						t.Errorf("%s: labelled %q, want %q (the endpoint would parse the body again)", what, got, wantLabel)
					}
				}
				return r
			}
			modernHd := map[string]string{"MCP-Protocol-Version": "2026-07-28"}
			withMeta := func(params map[string]any) map[string]any {
				params["_meta"] = modernMeta(true)
				return params
			}
			check("2026-07-28 resources/read (thin path)", "resources/read", func() reply {
				return p.post(map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Name": file}, "resources/read", withMeta(map[string]any{"uri": file}))
			})
			check("2026-07-28 skills/list (thin path)", "skills/list", func() reply {
				return p.post(modernHd, "skills/list", withMeta(map[string]any{}))
			})
			check("2026-07-28 server/discover (declined)", "server/discover", func() reply {
				return p.post(modernHd, "server/discover", withMeta(map[string]any{}))
			})
			check("2026-07-28 resources/read with an unknown member (declined)", "resources/read", func() reply {
				return p.post(map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Name": file}, "resources/read", withMeta(map[string]any{"uri": file, "x-extra": 1}))
			})
			check("2026-07-28 server/discover without the header (routed by _meta)", "server/discover", func() reply {
				return p.post(nil, "server/discover", withMeta(map[string]any{}))
			})
			var sid string
			check("2025-11-25 initialize", "initialize", func() reply {
				r := p.post(nil, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
					"clientInfo": map[string]any{"name": "raw-http", "version": "0"}})
				sid = r.session
				return r
			})
			old := map[string]string{"MCP-Protocol-Version": "2025-11-25"}
			if sid != "" {
				old["Mcp-Session-Id"] = sid
			}
			check("2025-11-25 notifications/initialized", "notifications/initialized", func() reply {
				return p.post(old, "notifications/initialized", map[string]any{})
			})
			check("2025-11-25 skills/list (thin path)", "skills/list", func() reply {
				return p.post(old, "skills/list", map[string]any{})
			})
			check("2025-11-25 resources/read (thin path)", "resources/read", func() reply {
				return p.post(old, "resources/read", map[string]any{"uri": file})
			})
			check("2025-11-25 resources/read with an unknown member (declined, charged)", "resources/read", func() reply {
				return p.post(old, "resources/read", map[string]any{"uri": file, "x-extra": 1})
			})
			check("2025-11-25 tools/list (declined)", "tools/list", func() reply {
				return p.post(old, "tools/list", map[string]any{})
			})
			check("a body that is not JSON", "<unparsed>", func() reply {
				req, _ := http.NewRequest(http.MethodPost, p.url, bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":`)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				return p.do(req)
			})
		})
	}
}
