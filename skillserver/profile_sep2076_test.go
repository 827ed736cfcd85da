//go:build !skillport_no_sep2076

package skillserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

func init() {
	defaultsHaveLegacy = true
	statelessProfileSets = append(statelessProfileSets, []skillserver.Profile{skillserver.ProfileSEP2640, skillserver.ProfileSEP2076})
}

// TestSkillsGetByName covers SEP-2076 skills/get: argument substitution,
// dependencies, files.
func TestSkillsGetByName(t *testing.T) {
	f := newFixture(t, legacyFiles(), nil)
	c := connectRaw(t, f.MCP, "")
	res := get[wire.GetByNameResult](c, "skills/get", map[string]any{"name": "report", "arguments": map[string]any{"topic": "quarterly"}})
	if want := "Write a quarterly report in a  tone. Keep {{other}} as written.\n"; res.Instructions != want {
		t.Errorf("instructions %q, want %q", res.Instructions, want)
	}
	res = get[wire.GetByNameResult](c, "skills/get", map[string]any{"name": "report", "arguments": map[string]any{"topic": "quarterly", "tone": "formal"}})
	if want := "Write a quarterly report in a formal tone. Keep {{other}} as written.\n"; res.Instructions != want {
		t.Errorf("instructions %q, want %q", res.Instructions, want)
	}
	if res.Dependencies == nil || !slices.Equal(res.Dependencies.Tools, []string{"read_pdf", "write_pdf"}) || len(res.Dependencies.Prompts) != 1 || res.Dependencies.Prompts[0] != (wire.PromptReference{Type: "ref/prompt", Name: "summarize"}) {
		t.Errorf("dependencies %+v", res.Dependencies)
	}
	var uris []string
	for _, fl := range res.Files {
		uris = append(uris, fl.URI)
		// files[] URIs are the stable ones, readable with resources/read.
		get[map[string]any](c, "resources/read", map[string]any{"uri": fl.URI})
	}
	if want := []string{"skill://report/references/guide.md", "skill://report/scripts/run.sh"}; !slices.Equal(uris, want) {
		t.Errorf("files %v, want %v", uris, want)
	}
	// Instructions come from the same bytes the SEP-2640 path serves.
	rr := get[readResult](c, "resources/read", map[string]any{"uri": "skill://report/SKILL.md"})
	if !strings.HasSuffix(string(rr.bytes(t)), "---\nWrite a {{ topic }} report in a {{tone}} tone. Keep {{other}} as written.\n") {
		t.Errorf("SKILL.md served as %q", rr.bytes(t))
	}
}

// TestCheckDependencies: attached to an application's server, dangling
// tool and prompt dependencies are diagnostics.
func TestCheckDependencies(t *testing.T) {
	dir := writeTree(t, t.TempDir(), legacyFiles())
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "app"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "read_pdf"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	sk, err := skillserver.Attach(s, skillserver.NewCatalogSource(cat), &skillserver.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	diags, err := sk.CheckDependencies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range diags {
		got = append(got, d.Kind+":"+d.Name)
		if d.Skill != "skill://report/SKILL.md" || !strings.Contains(d.Message, d.Name) {
			t.Errorf("diagnostic %+v", d)
		}
	}
	if want := []string{"tool:write_pdf", "prompt:summarize"}; !slices.Equal(got, want) {
		t.Errorf("dangling %v, want %v", got, want)
	}
	if len(sk.Diagnostics()) != 2 {
		t.Errorf("Diagnostics() = %v", sk.Diagnostics())
	}
	s.AddPrompt(&mcp.Prompt{Name: "summarize"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil })
	mcp.AddTool(s, &mcp.Tool{Name: "write_pdf"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	if diags, _ := sk.CheckDependencies(context.Background()); len(diags) != 0 {
		t.Errorf("after registering them: %v", diags)
	}
}
