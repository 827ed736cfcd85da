package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/wire"
)

// fake is a hostile-capable SEP-2640 server built with go-sdk directly. By
// default it serves its files honestly; tests override pieces of it.
type fake struct {
	name string // serverInfo.name

	// capabilities
	noExtension   bool
	experimental  bool
	noResources   bool
	directoryRead bool
	versions      []string // protocol revisions served; empty for all

	mu      sync.Mutex
	files   map[string]string // served content by URI
	entries []json.RawMessage // listing, one page unless list is set
	// list overrides skills/list: it gets the cursor and returns the raw result.
	list func(ctx context.Context, ss *mcp.ServerSession, cursor string) (json.RawMessage, error)
	// get overrides skills/get.
	get func(uri string) (json.RawMessage, error)
	// read overrides resources/read.
	read func(ctx context.Context, ss *mcp.ServerSession, uri string) (*mcp.ReadResourceResult, error)
	// dir answers resources/directory/read.
	dir func(uri string) (json.RawMessage, error)

	reads     map[string]int
	listCalls int
	getCalls  int
	server    *mcp.Server
}

func newFake(name string) *fake {
	return &fake{name: name, files: map[string]string{}, reads: map[string]int{}}
}

// rawResult sends any JSON as a result.
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

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// skillMD builds a SKILL.md with the given name and description.
func skillMD(name, desc string, extra ...string) string {
	fm := fmt.Sprintf("---\nname: %s\ndescription: %s\n", name, desc)
	for _, x := range extra {
		fm += x + "\n"
	}
	return fm + "---\n\n# " + name + "\n\nRead references/GUIDE.md.\n"
}

// addSkill serves a skill honestly: files are SKILL.md (from skillMD) plus
// extra files by path, and the listing entry describes them exactly.
func (f *fake) addSkill(path, desc string, extra map[string]string) string {
	name := path[strings.LastIndex(path, "/")+1:]
	root := "skill://" + path
	uri := root + "/SKILL.md"
	f.files[uri] = skillMD(name, desc)
	for p, c := range extra {
		f.files[root+"/"+p] = c
	}
	f.entries = append(f.entries, f.entryFor(uri, map[string]any{"name": name, "description": desc}))
	return uri
}

// entryFor describes uri's skill from the files currently served.
func (f *fake) entryFor(uri string, fm map[string]any) json.RawMessage {
	root := strings.TrimSuffix(uri, "/SKILL.md")
	var res []wire.SkillResource
	for _, u := range slices.Sorted(maps.Keys(f.files)) {
		if u == uri || strings.HasPrefix(u, root+"/") {
			res = append(res, wire.SkillResource{URI: u, Digest: digest(f.files[u]), Size: int64(len(f.files[u]))})
		}
	}
	b, _ := json.Marshal(map[string]any{"uri": uri, "frontmatter": fm, "resources": res})
	return b
}

func (f *fake) setEntries(es ...json.RawMessage) {
	f.mu.Lock()
	f.entries = es
	f.mu.Unlock()
}

func (f *fake) readCount(uri string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[uri]
}

func (f *fake) totalReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.reads {
		n += c
	}
	return n
}

func listPage(entries []json.RawMessage, next string) json.RawMessage {
	if entries == nil {
		entries = []json.RawMessage{}
	}
	m := map[string]any{"resultType": "complete", "skills": entries, "ttlMs": 300000, "cacheScope": "public"}
	if next != "" {
		m["nextCursor"] = next
	}
	b, _ := json.Marshal(m)
	return b
}

func (f *fake) build() *mcp.Server {
	caps := &mcp.ServerCapabilities{}
	if !f.noResources {
		caps.Resources = &mcp.ResourceCapabilities{ListChanged: true}
	}
	settings := map[string]any{}
	if f.directoryRead {
		settings["directoryRead"] = true
	}
	if !f.noExtension {
		if f.experimental {
			caps.Experimental = map[string]any{wire.ExtensionID: settings}
		} else {
			caps.AddExtension(wire.ExtensionID, settings)
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: f.name, Version: "1"}, &mcp.ServerOptions{Capabilities: caps, SupportedProtocolVersions: f.versions})
	mcp.AddReceivingCustomMethod(s, wire.MethodListSkills, func(ctx context.Context, ss *mcp.ServerSession, p *anyParams) (*rawResult, error) {
		f.mu.Lock()
		f.listCalls++
		list, entries := f.list, slices.Clone(f.entries)
		f.mu.Unlock()
		if list != nil {
			raw, err := list(ctx, ss, p.Cursor)
			return &rawResult{raw: raw}, err
		}
		return &rawResult{raw: listPage(entries, "")}, nil
	})
	mcp.AddReceivingCustomMethod(s, wire.MethodGetSkill, func(ctx context.Context, ss *mcp.ServerSession, p *anyParams) (*rawResult, error) {
		f.mu.Lock()
		f.getCalls++
		get, entries := f.get, slices.Clone(f.entries)
		f.mu.Unlock()
		if get != nil {
			raw, err := get(p.URI)
			return &rawResult{raw: raw}, err
		}
		for _, e := range entries {
			var x struct{ URI string }
			json.Unmarshal(e, &x)
			if x.URI == p.URI {
				b, _ := json.Marshal(map[string]any{"resultType": "complete", "skill": e, "ttlMs": 300000, "cacheScope": "public"})
				return &rawResult{raw: b}, nil
			}
		}
		return nil, &jsonrpcError{code: -32602, msg: "No skill is served at " + p.URI}
	})
	if f.directoryRead {
		mcp.AddReceivingCustomMethod(s, wire.MethodReadDirectory, func(ctx context.Context, ss *mcp.ServerSession, p *anyParams) (*rawResult, error) {
			raw, err := f.dir(p.URI)
			return &rawResult{raw: raw}, err
		})
	}
	if f.noResources {
		f.server = s
		return s
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "skills", URITemplate: "skill://{+path}"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		f.mu.Lock()
		f.reads[uri]++
		read := f.read
		content, ok := f.files[uri]
		f.mu.Unlock()
		if read != nil {
			return read(ctx, req.Session, uri)
		}
		if !ok {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: content}}}, nil
	})
	f.server = s
	return s
}

type jsonrpcError struct {
	code int64
	msg  string
}

func (e *jsonrpcError) Error() string { return e.msg }

// transport starts the fake and returns the client side.
func (f *fake) transport(t testing.TB) mcp.Transport {
	s := f.build()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Run(ctx, st) }()
	return ct
}

// recorder is an approver that records requests and answers from a script.
type recorder struct {
	mu       sync.Mutex
	requests []approval.Request
	decide   func(*approval.Request) approval.Decision
}

func (r *recorder) Approve(ctx context.Context, req *approval.Request) (approval.Decision, error) {
	r.mu.Lock()
	r.requests = append(r.requests, *req)
	d := r.decide
	r.mu.Unlock()
	if d == nil {
		return approval.Decision{Allow: true}, nil
	}
	return d(req), nil
}

func (r *recorder) count(k approval.Kind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.requests {
		if q.Kind == k {
			n++
		}
	}
	return n
}

// connect builds a host over the given origins and connects it.
func connect(t testing.TB, opts *Options, origins ...Origin) *Host {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h, err := New(origins, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func names(es []*Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Origin+":"+e.Qualified)
	}
	sort.Strings(out)
	return out
}

func hasDiag(h *Host, origin, substr string) bool {
	for _, d := range h.Diagnostics() {
		if d.Origin == origin && strings.Contains(d.Message, substr) {
			return true
		}
	}
	return false
}

func diags(h *Host) string {
	var b strings.Builder
	for _, d := range h.Diagnostics() {
		b.WriteString(d.String() + "\n")
	}
	return b.String()
}
