package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// repoRoot is the repository root, found from this file.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// examples is the example skill tree every upstream serves.
var examples = filepath.Join(repoRoot(), "examples", "skills")

// ourUpstream serves dir with our own server, in process, and returns the
// origin that reaches it and the catalog source (to change what it serves).
func ourUpstream(t testing.TB, label, dir string) (host.Origin, *published.CatalogSource) {
	t.Helper()
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	src := published.NewCatalogSource(cat)
	s, _, err := skillserver.New(&mcp.Implementation{Name: "upstream-" + label}, src, &skillserver.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	return host.Origin{Label: label, Transport: runServer(t, s)}, src
}

// runServer runs s in process and returns a transport that connects to it.
func runServer(t testing.TB, s *mcp.Server) mcp.Transport {
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Run(ctx, st) }()
	return ct
}

// allow approves every load and records the requests.
type allow struct {
	mu   sync.Mutex
	reqs []approval.Request
}

func (a *allow) Approve(_ context.Context, r *approval.Request) (approval.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs = append(a.reqs, *r)
	return approval.Decision{Allow: true}, nil
}

// newGateway builds and starts a gateway over origins; nil hostOpts approve
// everything and keep approvals in memory.
func newGateway(t testing.TB, origins []host.Origin, hostOpts *host.Options, opts *gateway.Options) *gateway.Gateway {
	t.Helper()
	if hostOpts == nil {
		hostOpts = &host.Options{Approver: &allow{}}
	}
	if hostOpts.Logger == nil {
		hostOpts.Logger = discard
	}
	if hostOpts.CallTimeout == 0 {
		hostOpts.CallTimeout = 5 * time.Second
	}
	if opts == nil {
		opts = &gateway.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = discard
	}
	if opts.UpdateDelay == 0 {
		opts.UpdateDelay = 10 * time.Millisecond
	}
	g, err := gateway.New(origins, hostOpts, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	g.Start(context.Background())
	return g
}

// clientOf connects a go-sdk client to g in process, once every upstream
// was listed (or failed): the gateway answers initialize within
// HandshakeWait, with what is listed by then, and these tests look at the
// whole catalog.
func clientOf(t testing.TB, g *gateway.Gateway, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	<-g.Ready()
	return clientNow(t, g, opts)
}

// clientNow connects a go-sdk client to g in process at once.
func clientNow(t testing.TB, g *gateway.Gateway, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := g.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its text and whether it is an error result.
func call(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): %v", tool, args, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// fake is an upstream skills server written directly on go-sdk, so that it
// can lie: it publishes entries computed from published, and serves served
// (which a test may make differ), optionally through a read hook.
type fake struct {
	mu        sync.Mutex
	published map[string]string                     // file URI -> content the entry describes
	served    map[string]string                     // file URI -> content resources/read returns
	read      func(ctx context.Context, uri string) // called before every read (may block)
	reads     map[string]int
	server    *mcp.Server
}

func newFake() *fake {
	return &fake{published: map[string]string{}, served: map[string]string{}, reads: map[string]int{}}
}

// add publishes (and serves) a skill at skill://<path> with extra files.
func (f *fake) add(path, desc, body string, extra map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := path[strings.LastIndex(path, "/")+1:]
	root := "skill://" + path
	md := "---\nname: " + name + "\ndescription: " + desc + "\n---\n\n" + body + "\n"
	f.published[root+"/SKILL.md"], f.served[root+"/SKILL.md"] = md, md
	for p, c := range extra {
		f.published[root+"/"+p], f.served[root+"/"+p] = c, c
	}
}

func (f *fake) entries() []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Files by skill root: every skill root above a file lists it.
	files := map[string][]string{}
	for _, u := range slices.Sorted(maps.Keys(f.published)) {
		for dir := u; strings.Contains(dir, "/"); {
			dir = dir[:strings.LastIndex(dir, "/")]
			if _, ok := f.published[dir+"/SKILL.md"]; ok {
				files[dir] = append(files[dir], u)
			}
		}
	}
	var out []json.RawMessage
	for _, root := range slices.Sorted(maps.Keys(files)) {
		uri := root + "/SKILL.md"
		name := root[strings.LastIndex(root, "/")+1:]
		md := f.published[uri]
		desc := strings.TrimSpace(strings.SplitN(strings.SplitN(md, "description: ", 2)[1], "\n", 2)[0])
		var res []wire.SkillResource
		for _, u := range files[root] {
			res = append(res, wire.SkillResource{URI: u, Digest: digest(f.published[u]), Size: int64(len(f.published[u]))})
		}
		b, _ := json.Marshal(map[string]any{"uri": uri, "frontmatter": map[string]any{"name": name, "description": desc}, "resources": res})
		out = append(out, b)
	}
	return out
}

type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

type anyParams struct {
	mcp.ParamsBase
	URI    string `json:"uri"`
	Cursor string `json:"cursor,omitempty"`
}

// origin starts the fake and returns an origin reaching it.
func (f *fake) origin(t testing.TB, label string) host.Origin {
	caps := &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{ListChanged: true}}
	caps.AddExtension(wire.ExtensionID, map[string]any{})
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, &mcp.ServerOptions{Capabilities: caps})
	mcp.AddReceivingCustomMethod(s, wire.MethodListSkills, func(ctx context.Context, _ *mcp.ServerSession, p *anyParams) (*rawResult, error) {
		b, _ := json.Marshal(map[string]any{"resultType": "complete", "skills": f.entries(), "ttlMs": 300000, "cacheScope": "public"})
		return &rawResult{raw: b}, nil
	})
	mcp.AddReceivingCustomMethod(s, wire.MethodGetSkill, func(ctx context.Context, _ *mcp.ServerSession, p *anyParams) (*rawResult, error) {
		for _, e := range f.entries() {
			var x struct{ URI string }
			json.Unmarshal(e, &x)
			if x.URI == p.URI {
				b, _ := json.Marshal(map[string]any{"resultType": "complete", "skill": e, "ttlMs": 300000, "cacheScope": "public"})
				return &rawResult{raw: b}, nil
			}
		}
		return nil, mcp.ResourceNotFoundError(p.URI)
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "skills", URITemplate: "skill://{+path}"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		f.mu.Lock()
		f.reads[uri]++
		hook := f.read
		content, ok := f.served[uri]
		f.mu.Unlock()
		if hook != nil {
			hook(ctx, uri)
		}
		if !ok {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: content}}}, nil
	})
	f.server = s
	return host.Origin{Label: label, Transport: runServer(t, s)}
}

func (f *fake) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.reads {
		n += c
	}
	return n
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// copyTree copies a skill tree.
func copyTree(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeSkill writes a minimal skill into dir.
func writeSkill(t testing.TB, dir, name, desc string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: " + name + "\ndescription: " + desc + "\n---\n\n# " + name + "\n\nDo the thing.\n"
	if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
}
