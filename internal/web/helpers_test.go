package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/web"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// skillMD returns a SKILL.md with the given name, description and body.
func skillMD(name, desc, body string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body)}
}

func openCatalog(t testing.TB, fsys fstest.MapFS) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Open(fsys, &catalog.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// serveWeb serves src through the real endpoint composition (MCP at /mcp,
// the web catalog mounted with Handle), as skillport serve --http does.
func serveWeb(t testing.TB, src published.Source, opts *web.Options) *httptest.Server {
	t.Helper()
	s, _, err := skillserver.New(&mcp.Implementation{Name: "test", Version: "0"}, src, &skillserver.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := endpoint.New(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil),
		&endpoint.Options{Source: src, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := web.New(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range h.Routes() {
		ep.Handle(p, h)
	}
	ts := httptest.NewServer(ep)
	t.Cleanup(ts.Close)
	return ts
}

func get(t testing.TB, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func mustContain(t testing.TB, where, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s: missing %q", where, w)
		}
	}
}

func mustNotContain(t testing.TB, where, body string, bad ...string) {
	t.Helper()
	for _, w := range bad {
		if strings.Contains(body, w) {
			t.Errorf("%s: contains %q", where, w)
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// listOverMCP lists the skills of the MCP endpoint at u with skills/list,
// as a host does.
func listOverMCP(t testing.TB, u string) []*wire.Skill {
	t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	if err := skillclient.Register(c); err != nil {
		t.Fatal(err)
	}
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", u, err)
	}
	defer sess.Close()
	var out []*wire.Skill
	for sk, err := range skillclient.New(sess, nil).List(ctx) {
		if err != nil {
			t.Fatalf("skills/list %s: %v", u, err)
		}
		out = append(out, sk)
	}
	return out
}
