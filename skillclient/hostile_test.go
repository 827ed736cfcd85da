package skillclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/wire"
)

// hostile serves skills/list and resources/directory/read from list and
// dir, and resources/read from read, whatever they return.
func hostile(t *testing.T, list func(cursor string) *wire.ListSkillsResult, dir func(cursor string) *wire.ReadDirectoryResult, read func(uri string) *mcp.ReadResourceResult) *skillclient.Client {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile"}, nil)
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodListSkills, func(_ context.Context, _ *mcp.ServerSession, p *wire.ListSkillsParams) (*wire.ListSkillsResult, error) {
		return list(p.Cursor), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodReadDirectory, func(_ context.Context, _ *mcp.ServerSession, p *wire.ReadDirectoryParams) (*wire.ReadDirectoryResult, error) {
		return dir(p.Cursor), nil
	}); err != nil {
		t.Fatal(err)
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ReadResourceRequest); ok && read != nil {
				return read(r.Params.URI), nil
			}
			return next(ctx, method, req)
		}
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
	skillclient.Register(c)
	cs, err := c.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return skillclient.New(cs, &skillclient.Options{MaxPages: 5})
}

func fm(t *testing.T, js string) skill.Frontmatter {
	var f skill.Frontmatter
	if err := json.Unmarshal([]byte(js), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// A server that repeats a cursor, or never stops handing them out, costs a
// bounded number of calls and ends the listing with an error.
func TestHostileCursors(t *testing.T) {
	good := wire.Skill{URI: "skill://a/SKILL.md", Frontmatter: fm(t, `{"name":"a","description":"A."}`), Resources: &wire.Resources{Dynamic: true}}
	calls := 0
	c := hostile(t, func(string) *wire.ListSkillsResult {
		calls++
		return &wire.ListSkillsResult{Skills: []wire.Skill{good}, NextCursor: "same"}
	}, func(cursor string) *wire.ReadDirectoryResult {
		calls++
		return &wire.ReadDirectoryResult{Resources: []wire.DirectoryEntry{{URI: "skill://a/x", Name: "x"}}, NextCursor: cursor + "x"}
	}, nil)
	var last error
	n, dups := 0, 0
	for _, err := range c.List(context.Background()) {
		switch {
		case err == nil:
			n++
		case errors.Is(err, skillclient.ErrInvalidEntry):
			dups++ // the second page lists the same skill again, as the host sees it
		default:
			last = err
		}
	}
	if !errors.Is(last, skillclient.ErrRepeatedCursor) || calls != 2 || n != 1 || dups != 1 {
		t.Fatalf("repeated cursor: %d entries, %d calls, %v", n, calls, last)
	}
	calls, last = 0, nil
	for _, err := range c.ReadDirectory(context.Background(), "skill://a") {
		if err != nil {
			last = err
		}
	}
	if !errors.Is(last, skillclient.ErrTooManyPages) || calls != 5 {
		t.Fatalf("endless cursors: %d calls, %v", calls, last)
	}
}

// Invalid entries are reported one by one and the listing goes on.
func TestHostileEntries(t *testing.T) {
	c := hostile(t, func(string) *wire.ListSkillsResult {
		return &wire.ListSkillsResult{Skills: []wire.Skill{
			{URI: "skill://a/../b/SKILL.md", Frontmatter: fm(t, `{"name":"b","description":"B."}`), Resources: &wire.Resources{Dynamic: true}},
			{URI: "skill://c/SKILL.md", Frontmatter: fm(t, `{"name":"other","description":"C."}`), Resources: &wire.Resources{Dynamic: true}},
			{URI: "skill://d/SKILL.md", Frontmatter: fm(t, `{"name":"d","description":"D."}`)},
			{URI: "skill://e/SKILL.md", Frontmatter: fm(t, `{"name":"e","description":"E."}`), Resources: &wire.Resources{Dynamic: true}},
		}}
	}, nil, func(uri string) *mcp.ReadResourceResult {
		// Another file's content, and a second item.
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "---\nname: e\ndescription: E.\n---\n"}, {URI: "skill://x/y", Text: "z"}}}
	})
	var ok []string
	bad := 0
	for s, err := range c.List(context.Background()) {
		if err != nil {
			if !errors.Is(err, skillclient.ErrInvalidEntry) {
				t.Fatalf("got %v, want ErrInvalidEntry", err)
			}
			bad++
			continue
		}
		ok = append(ok, s.URI)
	}
	if bad != 3 || len(ok) != 1 || ok[0] != "skill://e/SKILL.md" {
		t.Fatalf("valid %v, %d invalid", ok, bad)
	}
	e := &wire.Skill{URI: "skill://e/SKILL.md", Frontmatter: fm(t, `{"name":"e","description":"E."}`), Resources: &wire.Resources{Dynamic: true}}
	if _, err := c.Read(context.Background(), e, ""); !errors.Is(err, skillclient.ErrContents) {
		t.Fatalf("two content items: got %v, want ErrContents", err)
	}
}

// A "dynamic" skill has no sizes, but one file over the limit of a whole
// skill is refused: by go-sdk's frame limit on transports that have one,
// else by the client's own check.
func TestHostileDynamicSize(t *testing.T) {
	huge := strings.Repeat("x", skill.MaxBytes+1)
	c := hostile(t, nil, nil, func(uri string) *mcp.ReadResourceResult {
		if strings.HasSuffix(uri, "/big.txt") {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: huge}}}
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "small"}}}
	})
	e := &wire.Skill{URI: "skill://e/SKILL.md", Frontmatter: fm(t, `{"name":"e","description":"E."}`), Resources: &wire.Resources{Dynamic: true}}
	f, err := c.Read(context.Background(), e, "small.txt")
	if err != nil || f.Verified || string(f.Data) != "small" {
		t.Fatalf("small dynamic file: %+v, %v", f, err)
	}
	if f, err = c.Read(context.Background(), e, "big.txt"); err == nil || f != nil {
		t.Fatalf("over 16 MiB: got %d bytes, %v; want an error", len(f.Data), err)
	}
}
