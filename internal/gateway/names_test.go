package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/skillserver"
)

// writeSkillAt writes a skill named after the last segment of path, in
// dir/path: two such skills in different folders share a name.
func writeSkillAt(t testing.TB, dir, path, desc string) {
	t.Helper()
	name := filepath.Base(path)
	if err := os.MkdirAll(filepath.Join(dir, path), 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: " + name + "\ndescription: " + desc + "\n---\n\n# " + name + "\n\nDo the thing for " + path + ".\n"
	if err := os.WriteFile(filepath.Join(dir, path, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
}

// perCallerSessions serves g over HTTP behind bearer tokens and connects
// as each caller: tok-alice (scope internal) and tok-bob (no scope).
func perCallerSessions(t *testing.T, g *gateway.Gateway, opts map[string]*mcp.ClientOptions) (alice, bob *mcp.ClientSession) {
	t.Helper()
	<-g.Ready()
	h := g.Handler(&skillserver.HTTPOptions{Logger: discard})
	t.Cleanup(func() { h.Close() })
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		ti := map[string]*auth.TokenInfo{"tok-alice": {UserID: "alice", Scopes: []string{"internal"}}, "tok-bob": {UserID: "bob"}}[tok]
		if ti == nil {
			return nil, auth.ErrInvalidToken
		}
		c := *ti
		c.Expiration = time.Now().Add(time.Hour)
		return &c, nil
	}
	ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(h))
	t.Cleanup(ts.Close)
	connect := func(tok string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, opts[tok])
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearerRT{tok}}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	return connect("tok-alice"), connect("tok-bob")
}

var boundary = regexp.MustCompile(`untrusted_[0-9a-f]{16}`)

// TestGatewayNamesPerCaller: the names a caller sees (catalog, search,
// prompts, name resolution and its errors) are computed over what it sees.
// Bob, who may not see tools/pdf nor docs/support/refunds, gets answers
// byte-identical to those of a gateway whose upstreams simply do not have
// them: "pdf" and "refunds", not "docs__pdf" and "billing/refunds", and no
// ambiguity naming the hidden skills.
func TestGatewayNamesPerCaller(t *testing.T) {
	rules, err := access.Parse("rules.jsonc", []byte(`{"rules": [
		{"anyone": true, "paths": ["docs/pdf", "docs/greeting", "docs/billing", "tools/lint"]},
		{"scope": "internal", "paths": ["tools/pdf", "docs/support"]},
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	build := func(hidden bool) (alice, bob *mcp.ClientSession) {
		docsDir, toolsDir := t.TempDir(), t.TempDir()
		writeSkillAt(t, docsDir, "pdf", "Fill PDF forms and extract their text.")
		writeSkillAt(t, docsDir, "greeting", "Greets people warmly in several languages.")
		writeSkillAt(t, docsDir, "billing/refunds", "Refund a customer's invoice in billing.")
		writeSkillAt(t, toolsDir, "lint", "Lint source code before a review.")
		if hidden {
			writeSkillAt(t, docsDir, "support/refunds", "Refund procedures of the support desk.")
			writeSkillAt(t, toolsDir, "pdf", "Render PDF documents from templates.")
		}
		docs, _ := ourUpstream(t, "docs", docsDir)
		tools, _ := ourUpstream(t, "tools", toolsDir)
		g := newGateway(t, []host.Origin{docs, tools}, &host.Options{Approver: &allow{}}, &gateway.Options{Visible: rules.Visible})
		return perCallerSessions(t, g, nil)
	}
	alice, bobHidden := build(true)
	_, bobAbsent := build(false)
	ctx := context.Background()

	names := []string{"pdf", "docs__pdf", "tools__pdf", "docs:pdf", "tools:pdf", "refunds", "billing/refunds",
		"support/refunds", "docs:refunds", "docs__refunds", "docs:billing/refunds", "docs:support/refunds", "lint", "tools__lint", "nosuch"}
	type probe struct {
		name string
		ask  func(cs *mcp.ClientSession) string
	}
	tool := func(name string, args map[string]any) func(*mcp.ClientSession) string {
		return func(cs *mcp.ClientSession) string {
			out, isErr := call(t, cs, name, args)
			if isErr {
				return "error: " + out
			}
			return out
		}
	}
	or := func(v any, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		return toJSON(v)
	}
	probes := []probe{
		{"instructions", func(cs *mcp.ClientSession) string { return cs.InitializeResult().Instructions }},
		{"tools/list", func(cs *mcp.ClientSession) string { return or(cs.ListTools(ctx, nil)) }},
		{"prompts/list", func(cs *mcp.ClientSession) string { return or(cs.ListPrompts(ctx, nil)) }},
		{"resources/list", func(cs *mcp.ClientSession) string { return or(cs.ListResources(ctx, nil)) }},
	}
	for _, q := range []string{"pdf", "refunds", "pdf refunds forms render support", "lint"} {
		probes = append(probes, probe{"search " + q, tool(host.ToolSearchSkills, map[string]any{"query": q})})
	}
	for _, n := range names {
		probes = append(probes,
			probe{"read_skill " + n, tool(host.ToolReadSkill, map[string]any{"name": n})},
			probe{"read_skill_file " + n, tool(host.ToolReadSkillFile, map[string]any{"skill": n, "path": "SKILL.md"})},
			probe{"list_skill_dir " + n, tool(host.ToolListSkillDir, map[string]any{"skill": n})},
			probe{"prompts/get " + n, func(cs *mcp.ClientSession) string {
				return or(cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: n}))
			}},
		)
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			// Untrusted content's boundaries are random per response.
			got, want := boundary.ReplaceAllString(p.ask(bobHidden), "untrusted_B"), boundary.ReplaceAllString(p.ask(bobAbsent), "untrusted_B")
			if got != want {
				t.Errorf("bob's answer shows the skills hidden from him:\n got (hidden): %s\nwant (absent): %s", got, want)
			}
		})
	}

	// Alice sees every skill, so her names are the registry's.
	if out, _ := call(t, alice, host.ToolSearchSkills, map[string]any{"query": "pdf refunds"}); !strings.Contains(out, "<name>docs__pdf</name>") ||
		!strings.Contains(out, "<name>tools__pdf</name>") || !strings.Contains(out, "<name>support/refunds</name>") {
		t.Errorf("alice is not shown the qualified names: %s", out)
	}
	if out, isErr := call(t, alice, host.ToolReadSkill, map[string]any{"name": "pdf"}); !isErr || !strings.Contains(out, "names 2 skills") {
		t.Errorf("read_skill(pdf) for alice: want the ambiguity of two pdf skills, got %s", out)
	}
	if out, isErr := call(t, alice, host.ToolReadSkill, map[string]any{"name": "support/refunds"}); isErr || !strings.Contains(out, `name="support/refunds"`) {
		t.Errorf("read_skill(support/refunds) for alice: %s", out)
	}
	res, err := alice.GetPrompt(ctx, &mcp.GetPromptParams{Name: "tools__pdf"})
	if err != nil || !strings.Contains(res.Description, "tools__pdf") {
		t.Errorf("prompts/get tools__pdf for alice: %v %v", res, err)
	}
}

// TestGatewayNamesPerCallerNotifications: a hidden skill that renames a
// visible one in the registry (tools/pdf makes docs/pdf "docs__pdf")
// renames nothing for the caller who cannot see it, who is then told of
// no change of prompts.
func TestGatewayNamesPerCallerNotifications(t *testing.T) {
	rules, err := access.Parse("rules.jsonc", []byte(`{"rules": [
		{"anyone": true, "paths": ["docs", "tools/lint"]},
		{"scope": "internal", "paths": ["tools/pdf"]},
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	docsDir, toolsDir := t.TempDir(), t.TempDir()
	writeSkillAt(t, docsDir, "pdf", "Fill PDF forms and extract their text.")
	writeSkillAt(t, toolsDir, "lint", "Lint source code before a review.")
	docs, docsUp := ourUpstream(t, "docs", docsDir)
	tools, upstream := ourUpstream(t, "tools", toolsDir)
	g := newGateway(t, []host.Origin{docs, tools}, &host.Options{Approver: &allow{}, RefreshInterval: 10 * time.Millisecond},
		&gateway.Options{Visible: rules.Visible})
	var heardAlice, heardBob atomic.Int64
	alice, bob := perCallerSessions(t, g, map[string]*mcp.ClientOptions{
		"tok-alice": {PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { heardAlice.Add(1) }},
		"tok-bob":   {PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { heardBob.Add(1) }},
	})
	ctx := context.Background()
	prompts := func(cs *mcp.ClientSession) string {
		res, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range res.Prompts {
			out = append(out, p.Name)
		}
		return strings.Join(out, " ")
	}
	if a, b := prompts(alice), prompts(bob); a != "lint pdf" || b != "lint pdf" {
		t.Fatalf("prompts before: alice %q, bob %q", a, b)
	}
	writeSkillAt(t, toolsDir, "pdf", "Render PDF documents from templates.")
	cat, err := upstream.Catalog().Reload()
	if err != nil {
		t.Fatal(err)
	}
	upstream.Swap(cat)
	waitFor(t, "alice told of the new pdf", 10*time.Second, func() bool { return heardAlice.Load() >= 1 })
	if a := prompts(alice); a != "docs__pdf lint tools__pdf" {
		t.Errorf("alice's prompts after: %q", a)
	}
	if b := prompts(bob); b != "lint pdf" {
		t.Errorf("bob's prompts after: %q, want them unchanged", b)
	}
	// Whether bob was told is judged after a change both see, not after a
	// sleep: one broadcast tells both, and a session's notifications
	// arrive in order, so anything bob was told of the hidden skill is in
	// before alice hears of the public one.
	writeSkillAt(t, docsDir, "review", "Review a change before it is merged.")
	if cat, err = docsUp.Catalog().Reload(); err != nil {
		t.Fatal(err)
	}
	docsUp.Swap(cat)
	waitFor(t, "both told of the new review", 10*time.Second, func() bool { return heardAlice.Load() >= 2 && heardBob.Load() >= 1 })
	if n := heardBob.Load(); n != 1 {
		t.Errorf("bob was told %d times of a change of prompts, want once (the public one): a skill he cannot see changed his", n)
	}
}
