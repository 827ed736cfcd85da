package skillserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/skillserver"
)

// groupSource serves each group its own skills, from memory.
type groupSource struct {
	mu      sync.Mutex
	byGroup map[string][]*catalog.Skill
	content map[string][]byte
	lists   int
	notify  []func()
}

func (g *groupSource) add(t *testing.T, group, root string, files map[string][]byte) {
	t.Helper()
	sk, err := catalog.NewSkill(root, files)
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	for _, f := range sk.Files {
		_, rest, _ := strings.Cut(f.URI, root+"/")
		g.content[f.URI] = files[rest]
	}
	g.byGroup[group] = append(g.byGroup[group], sk)
	fns := slices.Clone(g.notify)
	g.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

func (g *groupSource) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lists++
	c := skillserver.CallerFromContext(ctx)
	if c == nil {
		return g.byGroup[""], nil
	}
	out := slices.Clone(g.byGroup[""])
	for _, gr := range c.Groups {
		out = append(out, g.byGroup[gr]...)
	}
	return out, nil
}

func (g *groupSource) ReadFile(_ context.Context, f *catalog.File) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	data, ok := g.content[f.URI]
	if !ok {
		return nil, catalog.ErrChanged
	}
	return data, nil
}

// notifyingSource adds change notification, which lets the adapter cache.
type notifyingSource struct{ *groupSource }

func (n notifyingSource) OnChange(fn func()) func() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notify = append(n.notify, fn)
	return func() {}
}

func md(name string) []byte {
	return []byte("---\nname: " + name + "\ndescription: The " + name + " skill.\n---\n# " + name + "\n")
}

// A source answers per caller: the caller comes from the bearer token
// go-sdk verified, and each user lists and reads only their skills.
func TestFromSkillsAnswersPerCaller(t *testing.T) {
	src := &groupSource{byGroup: map[string][]*catalog.Skill{}, content: map[string][]byte{}}
	src.add(t, "", "skill://public/hello", map[string][]byte{"SKILL.md": md("hello")})
	src.add(t, "billing", "skill://acme/refunds", map[string][]byte{"SKILL.md": md("refunds"), "ex/mail.md": []byte("Dear")})

	s, _, err := skillserver.New(nil, src, &skillserver.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token == "ann" {
			return &auth.TokenInfo{UserID: "ann", Extra: map[string]any{"groups": []any{"billing"}}, Expiration: time.Now().Add(time.Hour)}, nil
		}
		if token == "bob" {
			return &auth.TokenInfo{UserID: "bob", Expiration: time.Now().Add(time.Hour)}, nil
		}
		return nil, auth.ErrInvalidToken
	}
	h := auth.RequireBearerToken(verify, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close) // after the sessions' cleanups, which end their streams

	session := func(token string) *skillclient.Client {
		c := mcp.NewClient(&mcp.Implementation{Name: token}, nil)
		if err := skillclient.Register(c); err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: bearer{token}}
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return skillclient.New(cs, nil)
	}
	list := func(c *skillclient.Client) []string {
		var out []string
		for s, err := range c.List(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s.URI)
		}
		return out
	}
	ann, bob := session("ann"), session("bob")
	if got := strings.Join(list(ann), " "); got != "skill://acme/refunds/SKILL.md skill://public/hello/SKILL.md" {
		t.Fatalf("ann lists %s", got)
	}
	if got := strings.Join(list(bob), " "); got != "skill://public/hello/SKILL.md" {
		t.Fatalf("bob lists %s", got)
	}
	ctx := context.Background()
	e, err := ann.Get(ctx, "skill://acme/refunds/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ann.Read(ctx, e, "ex/mail.md")
	if err != nil || string(f.Data) != "Dear" {
		t.Fatalf("ann reads %v, %v", f, err)
	}
	var names []string
	for d, err := range ann.ReadDirectory(ctx, "skill://acme/refunds") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "refunds,ex" {
		t.Fatalf("directory of refunds: %v", names)
	}
	if _, err := bob.Get(ctx, "skill://acme/refunds/SKILL.md"); err == nil {
		t.Fatal("bob got a skill of another group")
	}
	if _, err := bob.Read(ctx, e, "ex/mail.md"); err == nil {
		t.Fatal("bob read a file of another group's skill")
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// A source that notifies changes is listed once per caller and change,
// and its changes reach clients as list_changed.
func TestFromSkillsCachesUntilChange(t *testing.T) {
	g := &groupSource{byGroup: map[string][]*catalog.Skill{}, content: map[string][]byte{}}
	g.add(t, "", "skill://a", map[string][]byte{"SKILL.md": md("a")})
	src := skillserver.FromSkills(notifyingSource{g})
	changed := make(chan published.Snapshot, 4)
	src.OnChange(func(_, n published.Snapshot) { changed <- n })
	ctx := context.Background()
	for range 5 {
		if _, err := src.View(ctx, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if g.lists != 1 {
		t.Fatalf("listed %d times for 5 requests of one caller", g.lists)
	}
	g.add(t, "", "skill://b", map[string][]byte{"SKILL.md": md("b")})
	select {
	case n := <-changed:
		if len(n.Skills()) != 2 {
			t.Fatalf("new snapshot has %d skills", len(n.Skills()))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no change reported")
	}
	// Without notification, every request lists again.
	plain := skillserver.FromSkills(g)
	before := g.lists
	plain.View(ctx, nil, nil)
	plain.View(ctx, nil, nil)
	if g.lists != before+2 {
		t.Fatalf("a source without OnChange was cached")
	}
}

type failing struct{}

func (failing) ListSkills(context.Context) ([]*catalog.Skill, error) {
	return nil, errors.New("database down")
}
func (failing) ReadFile(context.Context, *catalog.File) ([]byte, error) {
	return nil, catalog.ErrNotFound
}

// A source that cannot list answers with an error, never a crash or an
// empty success.
func TestFromSkillsFailureIsAnError(t *testing.T) {
	s, _, err := skillserver.New(nil, failing{}, &skillserver.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
	skillclient.Register(c)
	cs, err := c.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, err := range skillclient.New(cs, nil).List(context.Background()) {
		if err == nil || !strings.Contains(err.Error(), "cannot list its skills") {
			t.Fatalf("got %v", err)
		}
	}
}

func TestCallerFromToken(t *testing.T) {
	if skillserver.CallerFromToken(nil) != nil {
		t.Fatal("no token gave a caller")
	}
	c := skillserver.CallerFromToken(&auth.TokenInfo{UserID: "u", Scopes: []string{"skills:read"}, Extra: map[string]any{"groups": []string{"g"}}})
	if c.Subject != "u" || c.Scopes[0] != "skills:read" || c.Groups[0] != "g" {
		t.Fatalf("got %+v", c)
	}
	ctx := skillserver.ContextWithCaller(context.Background(), c)
	if skillserver.CallerFromContext(ctx) != c || skillserver.CallerFromContext(context.Background()) != nil {
		t.Fatal("caller did not round-trip through the context")
	}
}

// TestAttachUsesInternalSourcesAsTheyAre checks that New answers from the
// snapshots of a source that hands them out (the catalog source, a merge,
// access rules, the gateway, the registry), so their cached encodings stay
// the ones served, and adapts any other SkillSource.
func TestAttachUsesInternalSourcesAsTheyAre(t *testing.T) {
	cat, err := catalog.Open(fstest.MapFS{"a/SKILL.md": {Data: md("a")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	catSrc := skillserver.NewCatalogSource(cat)
	_, srv, err := skillserver.New(nil, catSrc, &skillserver.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if srv.Source() != catSrc {
		t.Errorf("the catalog source was wrapped: served from %T", srv.Source())
	}
	g := &groupSource{byGroup: map[string][]*catalog.Skill{}, content: map[string][]byte{}}
	_, srv, err = skillserver.New(nil, g, &skillserver.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Source().(published.Source); !ok || srv.Source() == skillserver.SkillSource(g) {
		t.Errorf("a plain SkillSource is served as %T, want the adapter", srv.Source())
	}
}
