package skillserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/stdio"
	"github.com/skillport/skillport/skillserver"
)

// lineClient writes raw lines to a stdio server and reads its lines.
type lineClient struct {
	t   *testing.T
	w   io.Writer
	out chan string
}

// startLines serves s (with the skills server srv) on skillport's stdio
// transport, as `skillport serve` does.
func startLines(t *testing.T, s *mcp.Server, srv *skillserver.Server) *lineClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, srv.Transport(&stdio.Transport{In: inR, Out: outW}))
	}()
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close(); <-done })
	c := &lineClient{t: t, w: inW, out: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			c.out <- sc.Text()
		}
		close(c.out)
	}()
	return c
}

func (c *lineClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next line the server writes that is not a notification.
func (c *lineClient) next() string {
	c.t.Helper()
	for {
		select {
		case l, ok := <-c.out:
			if !ok {
				c.t.Fatal("the server closed its output")
			}
			if strings.HasPrefix(l, `{"jsonrpc":"2.0","method"`) {
				continue
			}
			return l
		case <-time.After(10 * time.Second):
			c.t.Fatal("no response")
		}
	}
}

func (c *lineClient) call(line string) string {
	c.t.Helper()
	c.send(line)
	return c.next()
}

func stdioTwin(t *testing.T, opts skillserver.Options) (fast, slow *lineClient, fastSrv *skillserver.Server, fastMCP *mcp.Server) {
	t.Helper()
	twins(t, opts, func(noFast bool, s *mcp.Server, srv *skillserver.Server) {
		if noFast {
			slow = startLines(t, s, srv)
		} else {
			fast, fastSrv, fastMCP = startLines(t, s, srv), srv, s
		}
	})
	return fast, slow, fastSrv, fastMCP
}

func initLine(extension bool) string {
	caps := `{}`
	if extension {
		caps = `{"extensions":{"io.modelcontextprotocol/skills":{}}}`
	}
	return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"lines","version":"0"}}}`
}

// defaultsHaveLegacy is set by the legacy profiles' test files
// (profile_sep2076_test.go, profile_seed001_test.go): the default profiles
// then include one whose connection wrapper must see a legacy client list.
var defaultsHaveLegacy bool

// TestFastStdioMatchesSDK sends every golden request over skillport's
// stdio transport to a server with the thin read path and to one without,
// and requires the same response lines, and that the thin path answered
// the requests it is meant for (and none before initialize).
func TestFastStdioMatchesSDK(t *testing.T) {
	for _, profiles := range [][]skillserver.Profile{{skillserver.ProfileSEP2640}, nil} {
		for _, ext := range []bool{true, false} {
			t.Run(fmt.Sprintf("profiles=%v/extension=%v", profiles, ext), func(t *testing.T) {
				fast, slow, srv, _ := stdioTwin(t, skillserver.Options{TTL: 5 * time.Minute, PageSize: 2, Profiles: profiles})
				// Before initialize go-sdk refuses; so must the thin path.
				early := request("1", "resources/read", `{"uri":"skill://git-workflow/SKILL.md"}`)
				if f, s := fast.call(early), slow.call(early); f != s {
					t.Errorf("before initialize: thin path %s, go-sdk %s", f, s)
				}
				if n := skillserver.FastServed(srv); n != 0 {
					t.Errorf("the thin path answered %d requests before initialize", n)
				}
				if f, s := fast.call(initLine(ext)), slow.call(initLine(ext)); f != s {
					t.Fatalf("initialize: %s vs %s", f, s)
				}
				for _, c := range goldenCalls {
					before := skillserver.FastServed(srv)
					line := request(`"s-`+c.name+`"`, c.method, c.params)
					f, s := fast.call(line), slow.call(line)
					if f != s {
						t.Errorf("%s: the thin path answers\n%s\ngo-sdk answers\n%s", c.name, f, s)
					}
					served := skillserver.FastServed(srv) > before
					want := thinPathFor(c.name, c.method, exchange{status: 200, body: f})
					if c.method == "skills/list" && !ext && profiles == nil && defaultsHaveLegacy {
						want = false // a legacy client: its connection's wrapper must see it list
					}
					if served != want {
						t.Errorf("%s: thin path answered: %v, want %v", c.name, served, want)
					}
				}
			})
		}
	}
}

// TestFastStdioOrder checks the ordering rule: while a request handed to
// go-sdk is unanswered, later requests go to go-sdk too, so no answer of
// the thin path overtakes it; once it is answered, the thin path resumes.
func TestFastStdioOrder(t *testing.T) {
	fast, _, srv, s := stdioTwin(t, skillserver.Options{})
	release := make(chan struct{})
	s.AddTool(&mcp.Tool{Name: "wait", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	fast.call(initLine(true))
	read := request("2", "resources/read", `{"uri":"skill://git-workflow/SKILL.md"}`)
	fast.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	before := skillserver.FastServed(srv)
	if l := fast.call(read); !strings.Contains(l, `"id":2`) {
		t.Fatalf("want the read's response, got %s", l)
	}
	if skillserver.FastServed(srv) != before {
		t.Error("the thin path answered while a request handed to go-sdk was unanswered")
	}
	close(release)
	if l := fast.next(); !strings.Contains(l, `"id":1`) {
		t.Fatalf("want the tool's response, got %s", l)
	}
	if l := fast.call(strings.Replace(read, `"id":2`, `"id":3`, 1)); !strings.Contains(l, `"id":3`) {
		t.Fatalf("want the read's response, got %s", l)
	}
	if skillserver.FastServed(srv) != before+1 {
		t.Error("the thin path did not resume after the pending request was answered")
	}
	// A cancelled request no longer holds the thin path back.
	release2 := make(chan struct{})
	defer close(release2)
	s.AddTool(&mcp.Tool{Name: "hang", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-release2
		return &mcp.CallToolResult{}, nil
	})
	fast.send(`{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"hang","arguments":{}}}`)
	fast.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"h"}}`)
	if l := fast.call(strings.Replace(read, `"id":2`, `"id":4`, 1)); !strings.Contains(l, `"id":4`) {
		t.Fatalf("want the read's response, got %s", l)
	}
	if skillserver.FastServed(srv) != before+2 {
		t.Error("a cancelled request still holds the thin path back")
	}
}
