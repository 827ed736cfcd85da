package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/wire"
)

// rawResult sends any JSON as a result.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

type rawParams struct {
	mcp.ParamsBase
	URI string `json:"uri"`
}

// bareServer serves one skill the way a 2025-11-25 server may (the
// TypeScript reference server in such a session): results without
// resultType, ttlMs or cacheScope. It speaks only revision rev.
func bareServer(t *testing.T, rev string) host.Origin {
	const md = "---\nname: x\ndescription: d\n---\nbody\n"
	sum := sha256.Sum256([]byte(md))
	entry := fmt.Sprintf(`{"uri":"skill://x/SKILL.md","frontmatter":{"name":"x","description":"d"},"resources":[{"uri":"skill://x/SKILL.md","digest":"sha256:%s","size":%d}]}`, hex.EncodeToString(sum[:]), len(md))
	caps := &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{}}
	caps.AddExtension(wire.ExtensionID, nil)
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, &mcp.ServerOptions{Capabilities: caps, SupportedProtocolVersions: []string{rev}})
	mcp.AddReceivingCustomMethod(s, wire.MethodListSkills, func(context.Context, *mcp.ServerSession, *rawParams) (*rawResult, error) {
		return &rawResult{raw: json.RawMessage(`{"skills":[` + entry + `]}`)}, nil
	})
	mcp.AddReceivingCustomMethod(s, wire.MethodGetSkill, func(context.Context, *mcp.ServerSession, *rawParams) (*rawResult, error) {
		return &rawResult{raw: json.RawMessage(`{"skill":` + entry + `}`)}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "skills", URITemplate: "skill://{+path}"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: md}}}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx, st)
	return host.Origin{Label: "server", Transport: ct}
}

// TestVerifyFollowsTheRevisionAndItsSummary: a 2025-11-25 session whose
// results lack the fields 2026-07-28 requires verifies (exit 0, ok in
// --json); in a 2026-07-28 session the same answers fail, and the summary
// line and --json say why, so the exit status agrees with what is printed.
func TestVerifyFollowsTheRevisionAndItsSummary(t *testing.T) {
	for _, tc := range []struct {
		rev     string
		ok      bool
		summary string
	}{
		{"2025-11-25", true, "1 skill verified, 0 failed\n"},
		{"2026-07-28", false, "1 skill verified, 0 failed, 3 problems with the server's answers (on stderr)\n"},
	} {
		var out, errOut bytes.Buffer
		err := runVerify(context.Background(), &out, &errOut, flags(), []host.Origin{bareServer(t, tc.rev)}, false)
		if (err == nil) != tc.ok || !strings.HasSuffix(out.String(), tc.summary) {
			t.Errorf("%s: verify = %v, want ok %v; stdout:\n%s\nstderr:\n%s", tc.rev, err, tc.ok, out.String(), errOut.String())
		}
		if tc.ok && errOut.Len() > 0 {
			t.Errorf("%s: stderr:\n%s", tc.rev, errOut.String())
		}
		out.Reset()
		err = runVerify(context.Background(), &out, &errOut, flags(), []host.Origin{bareServer(t, tc.rev)}, true)
		var js struct {
			OK       bool     `json:"ok"`
			Problems []string `json:"problems"`
		}
		if jerr := json.Unmarshal(out.Bytes(), &js); jerr != nil || js.OK != tc.ok || (err == nil) != tc.ok || (len(js.Problems) == 0) != tc.ok {
			t.Errorf("%s: verify --json = %v, want ok %v:\n%s", tc.rev, err, tc.ok, out.String())
		}
	}
}
