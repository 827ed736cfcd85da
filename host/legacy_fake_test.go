package host

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skillport/skillport/wire"
)

// legacyFake is a server of the pre-extension skills primitive: the
// top-level "skills" capability, skills/list {name, description}, and
// skills/get by name (SEP-2076) or, when read is set, skills/read and
// skills/read_reference (seed 001). It records every request it receives.
type legacyFake struct {
	mu    sync.Mutex
	files map[string]string // resources/read content by URI
	// get answers skills/get {name}; read and ref, when set, answer
	// skills/read and skills/read_reference.
	get  func(name string) (json.RawMessage, error)
	read func(name string) (json.RawMessage, error)
	ref  func(name, ref string) (json.RawMessage, error)
	// contents overrides resources/read.
	contents func(uri string) *mcp.ReadResourceResult
	calls    []string
}

// legacyInit and legacyDiscover add capabilities.skills to the handshake
// result, which go-sdk's ServerCapabilities cannot express.
type legacyInit struct{ *mcp.InitializeResult }

func (r *legacyInit) MarshalJSON() ([]byte, error) { return withSkillsCapability(r.InitializeResult) }

type legacyDiscover struct{ *mcp.DiscoverResult }

func (r *legacyDiscover) MarshalJSON() ([]byte, error) { return withSkillsCapability(r.DiscoverResult) }

func withSkillsCapability(res any) ([]byte, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	caps, _ := m["capabilities"].(map[string]any)
	if caps == nil {
		caps = map[string]any{}
	}
	caps["skills"] = map[string]any{"listChanged": true}
	m["capabilities"] = caps
	return json.Marshal(m)
}

type legacyParams struct {
	mcp.ParamsBase
	Name      string `json:"name"`
	Reference string `json:"reference"`
	URI       string `json:"uri"`
}

func (f *legacyFake) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *legacyFake) transport(t testing.TB) mcp.Transport {
	caps := &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{Capabilities: caps})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if !strings.HasPrefix(method, "notifications/") {
				p, _ := json.Marshal(req.GetParams())
				f.record(method + " " + string(p))
			}
			res, err := next(ctx, method, req)
			switch r := res.(type) {
			case *mcp.InitializeResult:
				return &legacyInit{r}, err
			case *mcp.DiscoverResult:
				return &legacyDiscover{r}, err
			}
			return res, err
		}
	})
	mcp.AddReceivingCustomMethod(s, wire.MethodListSkills, func(ctx context.Context, ss *mcp.ServerSession, p *legacyParams) (*rawResult, error) {
		return &rawResult{raw: json.RawMessage(`{"skills":[{"name":"pdf","description":"Fill PDF forms."},{"name":"other","description":"Another skill."}]}`)}, nil
	})
	mcp.AddReceivingCustomMethod(s, wire.MethodGetSkill, func(ctx context.Context, ss *mcp.ServerSession, p *legacyParams) (*rawResult, error) {
		raw, err := f.get(p.Name)
		return &rawResult{raw: raw}, err
	})
	if f.read != nil {
		mcp.AddReceivingCustomMethod(s, wire.MethodReadSkill, func(ctx context.Context, ss *mcp.ServerSession, p *legacyParams) (*rawResult, error) {
			raw, err := f.read(p.Name)
			return &rawResult{raw: raw}, err
		})
		mcp.AddReceivingCustomMethod(s, wire.MethodReadReference, func(ctx context.Context, ss *mcp.ServerSession, p *legacyParams) (*rawResult, error) {
			raw, err := f.ref(p.Name, p.Reference)
			return &rawResult{raw: raw}, err
		})
	}
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		f.mu.Lock()
		content, ok := f.files[uri]
		override := f.contents
		f.mu.Unlock()
		if override != nil {
			return override(uri), nil
		}
		if !ok {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: content}}}, nil
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "skills", URITemplate: "skill://{+path}"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "files", URITemplate: "file:///{+path}"}, read)
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Run(ctx, st) }()
	return ct
}

func sep2076Fake() *legacyFake {
	f := &legacyFake{files: map[string]string{
		"file:///skills/pdf/forms.md":          "# Forms\n",
		"skill://elsewhere/pdf/guide/INTRO.md": "intro",
		"skill://pdf/not-listed.md":            "never read",
	}}
	f.get = func(name string) (json.RawMessage, error) {
		if name != "pdf" {
			return nil, &jsonrpcError{code: -32602, msg: "unknown skill"}
		}
		return json.RawMessage(`{"description":"Fill PDF forms.","instructions":"Read forms-reference.","files":[
			{"name":"forms-reference","uri":"file:///skills/pdf/forms.md","mimeType":"text/markdown","required":false},
			{"name":"guide/INTRO.md","uri":"skill://elsewhere/pdf/guide/INTRO.md"},
			{"name":"../escape.md","uri":"skill://pdf/escape.md"},
			{"name":"/abs.md","uri":"skill://pdf/abs.md"},
			{"name":"nouri.md","uri":""},
			{"name":"space uri.md","uri":"skill://pdf/a b.md"},
			{"name":"forms-reference","uri":"skill://pdf/dup.md"},
			{"name":7,"uri":"skill://pdf/seven.md"},
			"junk"
		]}`), nil
	}
	return f
}
