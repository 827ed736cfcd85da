package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/gateway"
)

type bearerRT struct{ tok string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// TestGatewayPerCaller: with visibility rules, the gateway's tools,
// prompts, instructions and re-published resources show each caller only
// the skills it may see, and a hidden skill answers as an absent one.
func TestGatewayPerCaller(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "greeting", "Greets people warmly in several languages.")
	writeSkill(t, dir, "payroll", "Internal payroll procedures for the finance team.")
	docs, upstream := ourUpstream(t, "docs", dir)
	rules, err := access.Parse("rules.jsonc", []byte(`{"rules": [
		{"anyone": true, "paths": ["docs/greeting"]},
		{"scope": "internal", "paths": ["docs/payroll"]},
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, []host.Origin{docs}, &host.Options{Approver: &allow{}, RefreshInterval: 10 * time.Millisecond},
		&gateway.Options{Visible: rules.Visible})
	ctx := context.Background()
	type counts struct{ prompts, resources atomic.Int64 }
	heard := map[string]*counts{}
	opts := map[string]*mcp.ClientOptions{}
	for _, tok := range []string{"tok-alice", "tok-bob"} {
		n := &counts{}
		heard[tok] = n
		opts[tok] = &mcp.ClientOptions{
			PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { n.prompts.Add(1) },
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { n.resources.Add(1) },
		}
	}
	alice, bob := perCallerSessions(t, g, opts)
	const payrollURI = "skill://docs/payroll/SKILL.md"

	// What each caller is shown.
	shown := func(cs *mcp.ClientSession) string {
		var b strings.Builder
		b.WriteString(cs.InitializeResult().Instructions)
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			b.WriteString(tl.Description)
			if s, ok := tl.InputSchema.(map[string]any); ok {
				b.WriteString(strings.Join(strings.Fields(strings.Trim(strings.ReplaceAll(strings.ReplaceAll(toJSON(s), "\"", " "), ",", " "), "{}")), " "))
			}
		}
		prompts, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range prompts.Prompts {
			b.WriteString(" prompt:" + p.Name)
		}
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Resources {
			b.WriteString(" " + r.URI)
		}
		out, _ := call(t, cs, host.ToolSearchSkills, map[string]any{"query": "finance procedures greets"})
		b.WriteString(out)
		return b.String()
	}
	if s := shown(alice); !strings.Contains(s, "prompt:payroll") || !strings.Contains(s, payrollURI) || !strings.Contains(s, "<name>payroll</name>") {
		t.Errorf("alice is not shown payroll: %s", s)
	}
	if s := shown(bob); strings.Contains(s, "payroll") || !strings.Contains(s, "greeting") {
		t.Errorf("bob is shown payroll, or not greeting: %s", s)
	}
	if out, isErr := call(t, alice, host.ToolReadSkill, map[string]any{"name": "payroll"}); isErr || !strings.Contains(out, "Do the thing") {
		t.Errorf("alice cannot read payroll: %s", out)
	}

	// Bob probing the hidden skill gets an absent skill's answers.
	for _, tool := range []struct {
		name string
		args func(string) map[string]any
	}{
		{host.ToolReadSkill, func(n string) map[string]any { return map[string]any{"name": n} }},
		{host.ToolReadSkillFile, func(n string) map[string]any { return map[string]any{"skill": n, "path": "SKILL.md"} }},
		{host.ToolListSkillDir, func(n string) map[string]any { return map[string]any{"skill": n} }},
	} {
		hid, _ := call(t, bob, tool.name, tool.args("payroll"))
		abs, _ := call(t, bob, tool.name, tool.args("nosuch"))
		if strings.ReplaceAll(abs, "nosuch", "payroll") != hid {
			t.Errorf("%s: hidden %q, absent %q", tool.name, hid, abs)
		}
	}
	errOf := func(err error, name string) string {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			t.Fatalf("want a JSON-RPC error, got %v", err)
		}
		return strings.ReplaceAll(we.Message, name, "NAME")
	}
	_, herr := bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: "payroll"})
	_, aerr := bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: "nosuch"})
	if h, a := errOf(herr, "payroll"), errOf(aerr, "nosuch"); h != a {
		t.Errorf("prompts/get: hidden %q, absent %q", h, a)
	}
	_, herr = bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: payrollURI})
	_, aerr = bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://docs/nosuch/SKILL.md"})
	if h, a := errOf(herr, "payroll"), errOf(aerr, "nosuch"); h != a {
		t.Errorf("resources/read: hidden %q, absent %q", h, a)
	}

	// A change only alice can see reaches alice only; a public one, both.
	edit := func(name, desc string) {
		writeSkill(t, dir, name, desc)
		cat, err := upstream.Catalog().Reload()
		if err != nil {
			t.Fatal(err)
		}
		upstream.Swap(cat)
	}
	a, b := heard["tok-alice"], heard["tok-bob"]
	// Whether bob was told of the payroll change is judged after the
	// public one, not after a sleep: one broadcast tells both callers, and
	// a session's notifications arrive in order, so anything bob was told
	// of payroll is in before alice hears of the greeting change.
	edit("payroll", "Internal payroll procedures, revised for the new fiscal year.")
	waitFor(t, "alice told of the payroll change", 10*time.Second, func() bool { return a.prompts.Load() >= 1 && a.resources.Load() >= 1 })
	edit("greeting", "Greets people warmly in many more languages.")
	waitFor(t, "both told of the greeting change", 10*time.Second, func() bool {
		return a.prompts.Load() >= 2 && a.resources.Load() >= 2 && b.prompts.Load() >= 1 && b.resources.Load() >= 1
	})
	if n, m := b.prompts.Load(), b.resources.Load(); n != 1 || m != 1 {
		t.Fatalf("bob was told of a change to a skill he cannot see: %d prompts, %d resources list_changed (want 1 each, the greeting's)", n, m)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
