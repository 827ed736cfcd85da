package access_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// callers are the test's bearer tokens and whom they stand for. The token
// verification itself is endpoint's (tested against a real OpenID
// provider); here go-sdk's middleware hands the server the caller.
var callers = map[string]*auth.TokenInfo{
	"tok-alice": {UserID: "alice", Scopes: []string{"internal"}},
	"tok-carol": {UserID: "carol", Scopes: []string{"internal"}}, // sees what alice sees
	"tok-bob":   {UserID: "bob"},
}

const testRules = `{"rules": [
	{"anyone": true, "paths": ["public"]},
	{"scope": "internal", "paths": ["internal"]},
]}`

type authFixture struct {
	dir string
	src *published.CatalogSource
}

// newAuthFixture serves public/hello and internal/pay through the rules,
// over streamable HTTP behind bearer tokens; servers > 1 starts replicas
// sharing a cursor key.
func newAuthFixture(t testing.TB, servers int, opts skillserver.Options) (*authFixture, []string) {
	t.Helper()
	dir := testTree(t)
	cat, err := catalog.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := published.NewCatalogSource(cat)
	return &authFixture{dir: dir, src: src}, serveAuthorized(t, src, servers, opts)
}

// testTree is the tree newAuthFixture serves, for other sources.
func testTree(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range map[string]string{
		"public/hello/SKILL.md":  "---\nname: hello\ndescription: Says hello to anyone at all.\n---\nv1\n",
		"public/howdy/SKILL.md":  "---\nname: howdy\ndescription: Says howdy to anyone at all.\n---\nv1\n",
		"internal/pay/SKILL.md":  "---\nname: pay\ndescription: Internal payroll procedures.\n---\nv1\n",
		"internal/plan/SKILL.md": "---\nname: plan\ndescription: Internal planning procedures.\n---\nv1\n",
	} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serveAuthorized serves src through the test rules on servers replicas
// (sharing opts.CursorKey), over streamable HTTP behind bearer tokens.
func serveAuthorized(t testing.TB, src published.Source, servers int, opts skillserver.Options) []string {
	t.Helper()
	rules, err := access.Parse("rules.jsonc", []byte(testRules))
	if err != nil {
		t.Fatal(err)
	}
	filtered := access.Filter(src, rules.Visible)
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.CacheScope = wire.CacheScopePrivate
	opts.ListChangedDelay = 10 * time.Millisecond
	var urls []string
	for range servers {
		s, _, err := skillserver.New(nil, filtered, &opts)
		if err != nil {
			t.Fatal(err)
		}
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
		hs := httptest.NewServer(auth.RequireBearerToken(verifyFrom(callers), nil)(h))
		t.Cleanup(hs.Close)
		urls = append(urls, hs.URL)
	}
	return urls
}

// verifyFrom verifies the test's bearer tokens: each stands for the
// caller tokens maps it to, for an hour.
func verifyFrom(tokens map[string]*auth.TokenInfo) auth.TokenVerifier {
	return func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		ti := tokens[tok]
		if ti == nil {
			return nil, auth.ErrInvalidToken
		}
		c := *ti
		c.Expiration = time.Now().Add(time.Hour)
		return &c, nil
	}
}

func (f *authFixture) edit(t testing.TB, path string) {
	t.Helper()
	p := filepath.Join(f.dir, path)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(b, "more\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := f.src.Catalog().Reload()
	if err != nil {
		t.Fatal(err)
	}
	f.src.Swap(c)
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// notes records the change notifications one client receives.
type notes struct {
	mu      sync.Mutex
	lists   int
	updated []string
}

func (n *notes) get() (int, []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lists, append([]string(nil), n.updated...)
}

func connect(t testing.TB, url, tok string) (*mcp.ClientSession, *notes) {
	t.Helper()
	n := &notes{}
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			n.mu.Lock()
			n.lists++
			n.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			n.mu.Lock()
			n.updated = append(n.updated, r.Params.URI)
			n.mu.Unlock()
		},
	})
	mcp.AddSendingCustomMethod[*wire.GetParams, *wire.GetByNameResult](c, wire.MethodGetSkill)
	mcp.AddSendingCustomMethod[*wire.NameParams, *wire.ReadResult](c, wire.MethodReadSkill)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{tok}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, n
}

// rpcErr returns err's JSON-RPC code and message, the URI in it replaced
// by "URI", so that the answers for two URIs can be compared.
func rpcErr(t *testing.T, err error, uri string) (int64, string) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	if uri == "" {
		return we.Code, we.Message
	}
	return we.Code, strings.ReplaceAll(we.Message, uri, "URI")
}

// TestNotificationsPerCaller: a session is told only about changes its
// caller can see, subscribing to a hidden URI is refused exactly as an
// absent one, and skill://index.json lists the caller's view.
func TestNotificationsPerCaller(t *testing.T) {
	f, urls := newAuthFixture(t, 1, skillserver.Options{})
	ctx := context.Background()
	alice, an := connect(t, urls[0], "tok-alice")
	bob, bn := connect(t, urls[0], "tok-bob")

	const (
		pay    = "skill://internal/pay/SKILL.md"
		absent = "skill://internal/gone/SKILL.md"
		hello  = "skill://public/hello/SKILL.md"
	)
	if err := alice.Subscribe(ctx, &mcp.SubscribeParams{URI: pay}); err != nil {
		t.Fatalf("alice cannot subscribe to a skill she sees: %v", err)
	}
	hidCode, hidMsg := rpcErr(t, bob.Subscribe(ctx, &mcp.SubscribeParams{URI: pay}), pay)
	absCode, absMsg := rpcErr(t, bob.Subscribe(ctx, &mcp.SubscribeParams{URI: absent}), absent)
	if hidCode != absCode || hidMsg != absMsg {
		t.Errorf("subscribing to a hidden URI: %d %q; to an absent one: %d %q", hidCode, hidMsg, absCode, absMsg)
	}
	for _, cs := range []*mcp.ClientSession{alice, bob} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: hello}); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		cs       *mcp.ClientSession
		see, not string
	}{{alice, "internal/pay", ""}, {bob, "public/hello", "internal/"}} {
		res, err := tc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: wire.IndexURI})
		if err != nil {
			t.Fatal(err)
		}
		ix := res.Contents[0].Text
		if !strings.Contains(ix, tc.see) || tc.not != "" && strings.Contains(ix, tc.not) {
			t.Errorf("index.json: want %q, not %q: %s", tc.see, tc.not, ix)
		}
	}

	// Only a hidden skill changes: bob hears nothing. Whether he was told
	// is judged after a public change both hear of, not after a sleep: a
	// session's notifications arrive in the order they are sent, and one
	// broadcast tells alice and bob together, so what bob would have been
	// told of the hidden change reaches him before the public change's
	// list_changed, which reaches alice in the same broadcast.
	f.edit(t, "internal/pay/SKILL.md")
	waitFor(t, "alice's list_changed and updated for "+pay, func() bool {
		l, u := an.get()
		return l == 1 && len(u) == 1 && u[0] == pay
	})
	f.edit(t, "public/hello/SKILL.md")
	waitFor(t, "both told of the public change", func() bool {
		al, au := an.get()
		bl, bu := bn.get()
		return al == 2 && len(au) == 2 && au[1] == hello && bl >= 1 && slices.Contains(bu, hello)
	})
	if l, u := bn.get(); l != 1 || len(u) != 1 {
		t.Fatalf("bob was told about a change to a skill he cannot see: %d list_changed (want 1, the public change's), updated %v (want only %s)", l, u, hello)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCursorBoundToCaller: a cursor issued to one caller is refused for
// another, even one who sees the same skills, with the -32602 a stale
// cursor gets; replicas sharing the cursor key accept it from its caller.
func TestCursorBoundToCaller(t *testing.T) {
	_, urls := newAuthFixture(t, 2, skillserver.Options{PageSize: 1, CursorKey: cursorKey})
	cursorBound(t, urls)
}

var cursorKey = []byte("0123456789abcdef0123456789abcdef")

// cursorBound checks, on two replicas sharing the cursor key, that
// alice's cursor pages on for her on either and is refused for carol (who
// sees the same skills) and bob as stale.
func cursorBound(t *testing.T, urls []string) {
	t.Helper()
	ctx := context.Background()
	alice, _ := connect(t, urls[0], "tok-alice")
	first, err := alice.ListResources(ctx, &mcp.ListResourcesParams{})
	if err != nil {
		t.Fatal(err)
	}
	// The first page is the index; page on to a cursor of skill files.
	page, err := alice.ListResources(ctx, &mcp.ListResourcesParams{Cursor: first.NextCursor})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("alice's second page: %v %v", page, err)
	}
	cur := page.NextCursor

	aliceThere, _ := connect(t, urls[1], "tok-alice")
	if _, err := aliceThere.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cur}); err != nil {
		t.Errorf("alice's cursor on a replica sharing the key: %v", err)
	}
	for _, tok := range []string{"tok-carol", "tok-bob"} {
		for _, u := range urls {
			other, _ := connect(t, u, tok)
			_, err := other.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cur})
			code, msg := rpcErr(t, err, "")
			if code != jsonrpc.CodeInvalidParams || !strings.Contains(msg, "stale cursor") {
				t.Errorf("%s presenting alice's cursor at %s: %d %q; want -32602 stale cursor", tok, u, code, msg)
			}
		}
	}
}

// TestProfilesPerCaller: the legacy designs' lookups by name ask the same
// decision: a caller finds by name what it may see, and a hidden skill's
// name is answered exactly as a name nothing has.
func TestProfilesPerCaller(t *testing.T) {
	_, urls := newAuthFixture(t, 1, skillserver.Options{})
	ctx := context.Background()
	alice, _ := connect(t, urls[0], "tok-alice")
	bob, _ := connect(t, urls[0], "tok-bob")
	name := func(s string) *string { return &s }
	get := func(cs *mcp.ClientSession, n string) error {
		_, err := mcp.CallCustomMethod[*wire.GetParams, *wire.GetByNameResult](ctx, cs, wire.MethodGetSkill, &wire.GetParams{Name: name(n)})
		return err
	}
	read := func(cs *mcp.ClientSession, n string) error {
		_, err := mcp.CallCustomMethod[*wire.NameParams, *wire.ReadResult](ctx, cs, wire.MethodReadSkill, &wire.NameParams{Name: n})
		return err
	}
	for _, call := range []struct {
		method string
		fn     func(*mcp.ClientSession, string) error
	}{{"skills/get by name", get}, {"skills/read", read}} {
		if err := call.fn(alice, "pay"); err != nil {
			t.Errorf("alice: %s pay: %v", call.method, err)
		}
		if err := call.fn(bob, "hello"); err != nil {
			t.Errorf("bob: %s hello: %v", call.method, err)
		}
		hc, hm := rpcErr(t, call.fn(bob, "pay"), "pay")
		ac, am := rpcErr(t, call.fn(bob, "nosuch"), "nosuch")
		if hc != ac || hm != am {
			t.Errorf("%s of a hidden skill: %d %q; of an absent one: %d %q", call.method, hc, hm, ac, am)
		}
	}
}
