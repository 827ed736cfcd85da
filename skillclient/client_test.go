package skillclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/skills"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// connect serves tree and returns a session on it; reads counts the
// resources/read calls the server received.
func connect(t *testing.T, tree fstest.MapFS, opts *skills.Options, register bool) (*mcp.ClientSession, *int) {
	t.Helper()
	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	sv, err := skills.AddFS(s, tree, opts)
	if err != nil {
		t.Fatal(err)
	}
	reads := new(int)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/read" {
				*reads++
			}
			return next(ctx, method, req)
		}
	})
	t.Cleanup(func() { sv.Close() })
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
	if register {
		if err := skillclient.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, reads
}

func tree(n int) fstest.MapFS {
	m := fstest.MapFS{}
	for i := range n {
		name := fmt.Sprintf("s%03d", i)
		m[name+"/SKILL.md"] = &fstest.MapFile{Data: []byte("---\nname: " + name + "\ndescription: D.\n---\n")}
		m[name+"/a.txt"] = &fstest.MapFile{Data: []byte("a")}
	}
	return m
}

func TestListWalksEveryPage(t *testing.T) {
	cs, _ := connect(t, tree(7), &skills.Options{Server: skillserver.Options{PageSize: 2}}, true)
	c := skillclient.New(cs, nil)
	if !c.Supported() {
		t.Fatal("Supported is false for a server serving the extension")
	}
	var got []string
	for s, err := range c.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s.URI)
	}
	if len(got) != 7 || got[0] != "skill://s000/SKILL.md" || got[6] != "skill://s006/SKILL.md" {
		t.Fatalf("listed %v", got)
	}
	// Breaking out of the loop stops the walk.
	for range c.List(context.Background()) {
		break
	}
}

func TestListStopsAtMaxPages(t *testing.T) {
	cs, _ := connect(t, tree(7), &skills.Options{Server: skillserver.Options{PageSize: 1}}, true)
	n := 0
	var last error
	for _, err := range skillclient.New(cs, &skillclient.Options{MaxPages: 3}).List(context.Background()) {
		if err != nil {
			last = err
			break
		}
		n++
	}
	if n != 3 || !errors.Is(last, skillclient.ErrTooManyPages) {
		t.Fatalf("got %d skills and %v; want 3 and ErrTooManyPages", n, last)
	}
}

func TestReadChecksBeforeSending(t *testing.T) {
	cs, reads := connect(t, tree(1), nil, true)
	c := skillclient.New(cs, nil)
	ctx := context.Background()
	e, err := c.Get(ctx, "skill://s000/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Read(ctx, e, "")
	if err != nil || f.Document == nil || !f.Verified || f.Path != "SKILL.md" {
		t.Fatalf("reading SKILL.md: %+v, %v", f, err)
	}
	for _, ref := range []string{"b.txt", "../s001/SKILL.md", "skill://other/x"} {
		if _, err := c.Read(ctx, e, ref); !errors.Is(err, skillclient.ErrUnlisted) {
			t.Errorf("Read(%q): got %v, want ErrUnlisted", ref, err)
		}
	}
	if *reads != 1 {
		t.Fatalf("the server received %d reads; refused references must not be sent", *reads)
	}
	// An entry altered after it was listed no longer vouches for the bytes.
	e.Resources.Files[1].Digest = skillclient.Digest([]byte("b"))
	if _, err := c.Read(ctx, e, "a.txt"); !errors.Is(err, skillclient.ErrDigest) {
		t.Fatalf("got %v, want ErrDigest", err)
	}
	var names []string
	for d, err := range c.ReadDirectory(ctx, "skill://s000") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "s000,a.txt" {
		t.Fatalf("directory: %v", names)
	}
	if _, err := c.Get(ctx, "skill://nope/SKILL.md"); err == nil {
		t.Fatal("Get of an unknown skill succeeded")
	}
}

// raw is what another library might register for skills/list on a
// shared client.
type raw struct {
	mcp.ResultBase
	Skills []json.RawMessage `json:"skills"`
}

func TestRegistrationMistakesAreErrors(t *testing.T) {
	cs, _ := connect(t, tree(1), nil, false)
	for _, err := range skillclient.New(cs, nil).List(context.Background()) {
		if err == nil || !strings.Contains(err.Error(), "skillclient.Register") {
			t.Fatalf("unregistered client: got %v", err)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
	if err := mcp.AddSendingCustomMethod[*wire.ListSkillsParams, *raw](c, wire.MethodListSkills); err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	sv, err := skills.AddFS(s, tree(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := s.Connect(context.Background(), st, nil)
	defer ss.Close()
	sess, err := c.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, err := range skillclient.New(sess, nil).List(context.Background()) {
		if err == nil || !strings.Contains(err.Error(), "other types") {
			t.Fatalf("client registered with other types: got %v", err)
		}
	}
}
