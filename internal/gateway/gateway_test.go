package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/gateway"
)

// TestAgentFlowGoClient drives the gateway the way an agent does, with the
// go-sdk client, over two upstreams: our own server (in process) and a
// local skill folder. It lists the tools, reads the instructions, searches,
// loads a skill, and follows the relative reference its body makes.
func TestAgentFlowGoClient(t *testing.T) {
	docs, _ := ourUpstream(t, "docs", examples)
	g := newGateway(t, []host.Origin{docs, {Label: "local", Dir: examples}}, nil, nil)
	cs := clientOf(t, g, nil)
	ctx := context.Background()

	// Instructions: the catalog, with both origins' skills and their sources.
	inst := cs.InitializeResult().Instructions
	for _, want := range []string{"<available_skills>", "<name>code-review</name>", "<source>filesystem:local</source>", "<source>mcp:docs</source>", "docs__code-review", "read_skill"} {
		if !strings.Contains(inst, want) {
			t.Errorf("instructions lack %q:\n%s", want, inst)
		}
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var readSkill *mcp.Tool
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == "read_skill" {
			readSkill = tl
		}
	}
	slices.Sort(names)
	if want := []string{"list_skill_dir", "read_skill", "read_skill_file", "search_skills"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	if !strings.Contains(readSkill.Description, "<available_skills>") {
		t.Errorf("read_skill description carries no catalog:\n%s", readSkill.Description)
	}
	schema, _ := json.Marshal(readSkill.InputSchema)
	for _, want := range []string{`"enum"`, `"docs__pdf-processing"`, `"pdf-processing"`, `"docs__refunds"`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("read_skill schema lacks %s: %s", want, schema)
		}
	}

	// search_skills ranks the skill that fits first.
	out, isErr := call(t, cs, "search_skills", map[string]any{"query": "review a pull request diff", "limit": 3})
	if isErr || !strings.Contains(out, "<search_results") {
		t.Fatalf("search_skills: %s", out)
	}
	first := out[strings.Index(out, "<name>")+6:]
	first = first[:strings.Index(first, "</name>")]
	if !strings.HasSuffix(first, "code-review") {
		t.Errorf("search for a review ranked %q first:\n%s", first, out)
	}

	// read_skill on the MCP copy: untrusted, tagged with its origin, with its files.
	out, isErr = call(t, cs, "read_skill", map[string]any{"name": "docs__code-review"})
	if isErr {
		t.Fatalf("read_skill: %s", out)
	}
	for _, want := range []string{`source="mcp:docs"`, `trust="untrusted"`, "Read the whole change", "<file>references/CHECKLIST.md</file>"} {
		if !strings.Contains(out, want) {
			t.Errorf("read_skill result lacks %q:\n%s", want, out)
		}
	}
	// The body refers to references/CHECKLIST.md: follow it.
	out, isErr = call(t, cs, "read_skill_file", map[string]any{"skill": "docs__code-review", "path": "references/CHECKLIST.md"})
	if isErr || !strings.Contains(out, "# Review checklist") || !strings.Contains(out, `trust="untrusted"`) {
		t.Fatalf("read_skill_file: %s", out)
	}
	out, isErr = call(t, cs, "list_skill_dir", map[string]any{"skill": "docs__code-review", "path": ""})
	if isErr || !strings.Contains(out, "<dir>references</dir>") {
		t.Fatalf("list_skill_dir: %s", out)
	}

	// The local copy keeps the bare name; its file reads come from disk.
	out, isErr = call(t, cs, "read_skill", map[string]any{"name": "code-review"})
	if isErr || !strings.Contains(out, `source="filesystem:local"`) {
		t.Fatalf("read_skill local: %s", out)
	}
	out, isErr = call(t, cs, "read_skill_file", map[string]any{"skill": "code-review", "path": "references/CHECKLIST.md"})
	if isErr || !strings.Contains(out, "# Review checklist") {
		t.Fatalf("read_skill_file local: %s", out)
	}
}

func TestToolErrorsGuideTheModel(t *testing.T) {
	docs, _ := ourUpstream(t, "docs", examples)
	g := newGateway(t, []host.Origin{docs}, nil, nil)
	cs := clientOf(t, g, nil)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_skill", map[string]any{"name": "no-such-skill"}, "search_skills"},
		{"read_skill", map[string]any{}, "no skill name"},
		{"read_skill_file", map[string]any{"skill": "code-review", "path": "references/CHECKLIST.md"}, `call read_skill(name="code-review") first`},
		{"search_skills", map[string]any{"query": "  "}, "query is empty"},
	} {
		out, isErr := call(t, cs, c.tool, c.args)
		if !isErr || !strings.Contains(out, c.want) {
			t.Errorf("%s(%v) = %q (error %v), want an error containing %q", c.tool, c.args, out, isErr, c.want)
		}
	}
	call(t, cs, "read_skill", map[string]any{"name": "code-review"})
	for _, c := range []struct{ path, want string }{
		{"../pdf-processing/SKILL.md", "outside the skill root"},
		{"references/NOPE.md", "not listed"},
		{"references", "directory"},
	} {
		out, isErr := call(t, cs, "read_skill_file", map[string]any{"skill": "code-review", "path": c.path})
		if !isErr || !strings.Contains(out, c.want) || !strings.Contains(out, "origin docs") {
			t.Errorf("read_skill_file(%q) = %q, want an error naming origin docs and containing %q", c.path, out, c.want)
		}
	}
}

// TestFiltersAndBudget: include/exclude per origin, an empty include list
// hiding everything, and a catalog cut at the token budget that points the
// model to search_skills.
func TestFiltersAndBudget(t *testing.T) {
	docs, _ := ourUpstream(t, "docs", examples)
	g := newGateway(t, []host.Origin{docs, {Label: "local", Dir: examples}}, nil, &gateway.Options{
		Filters: map[string]*gateway.Filter{
			"docs":  {Include: []string{"PDF-*", "acme/*/refunds"}, Exclude: []string{"pdf-processing/form-filling"}},
			"local": {Include: []string{}},
		},
	})
	cs := clientOf(t, g, nil)
	res, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range res.Prompts {
		got = append(got, p.Name)
	}
	slices.Sort(got)
	if want := []string{"pdf-processing", "refunds"}; !slices.Equal(got, want) {
		t.Errorf("shown skills %v, want %v", got, want)
	}
	out, isErr := call(t, cs, "read_skill", map[string]any{"name": "code-review"})
	if !isErr || !strings.Contains(out, "unknown skill") {
		t.Errorf("an excluded skill was readable: %s", out)
	}

	g2 := newGateway(t, []host.Origin{{Label: "local", Dir: examples}}, nil, &gateway.Options{TokenBudget: 150})
	inst := clientOf(t, g2, nil).InitializeResult().Instructions
	if !strings.Contains(inst, "<more_skills") || !strings.Contains(inst, "search_skills") {
		t.Errorf("a catalog over budget does not point to search_skills:\n%s", inst)
	}
	cat := inst[strings.Index(inst, "The following skills"):]
	if len(cat) > 150*4 {
		t.Errorf("catalog is %d bytes, over the budget of %d", len(cat), 150*4)
	}
}

func TestNoSkillsNoTools(t *testing.T) {
	g := newGateway(t, []host.Origin{{Label: "local", Dir: t.TempDir()}}, nil, nil)
	cs := clientOf(t, g, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 0 {
		t.Errorf("%d tools with no skill (F-9)", len(tools.Tools))
	}
	if inst := cs.InitializeResult().Instructions; strings.Contains(inst, "available_skills") {
		t.Errorf("empty catalog rendered: %s", inst)
	}
}

// TestPromptCarriesVerifiedSkill: a prompt per skill, whose message is the
// loaded, verified skill.
func TestPromptCarriesVerifiedSkill(t *testing.T) {
	docs, _ := ourUpstream(t, "docs", examples)
	g := newGateway(t, []host.Origin{docs}, nil, nil)
	cs := clientOf(t, g, nil)
	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "pdf-processing", Arguments: map[string]string{"task": "fill form.pdf"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 {
		t.Fatalf("%d messages", len(res.Messages))
	}
	text := res.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{`source="mcp:docs"`, `trust="untrusted"`, "# PDF processing", "Task: fill form.pdf"} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt lacks %q:\n%s", want, text)
		}
	}
}

// TestListChangedPropagates: an upstream that changes what it serves makes
// the gateway announce tools, prompts and resources list_changed.
func TestListChangedPropagates(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, examples, dir)
	docs, src := ourUpstream(t, "docs", dir)
	g := newGateway(t, []host.Origin{docs}, &host.Options{Approver: &allow{}, RefreshInterval: 10 * time.Millisecond}, nil)
	// The first registration is done when Ready closes, before any session
	// exists: go-sdk schedules list_changed only for existing sessions, so
	// every notification the client gets is the change's (no drain after a
	// sleep).
	<-g.Ready()
	got := make(chan string, 10)
	cs := clientOf(t, g, &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { got <- "tools" },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { got <- "prompts" },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { got <- "resources" },
	})
	writeSkill(t, dir, "new-skill", "A brand new skill for testing change propagation.")
	c, err := src.Catalog().Reload()
	if err != nil {
		t.Fatal(err)
	}
	src.Swap(c)
	seen := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for len(seen) < 3 {
		select {
		case n := <-got:
			seen[n] = true
		case <-deadline:
			t.Fatalf("after an upstream change the client saw only %v list_changed", seen)
		}
	}
	prompts, _ := cs.ListPrompts(context.Background(), nil)
	found := false
	for _, p := range prompts.Prompts {
		found = found || p.Name == "new-skill"
	}
	if !found {
		t.Error("the new skill has no prompt after list_changed")
	}
	tools, _ := cs.ListTools(context.Background(), nil)
	for _, tl := range tools.Tools {
		if tl.Name == "read_skill" && !strings.Contains(tl.Description, "new-skill") {
			t.Error("read_skill's catalog lacks the new skill")
		}
	}
}

// TestSkillChangedUpstream: once a loaded skill changes upstream, its held
// window no longer serves files (the model is told to load it again), and
// read_skill loads and verifies the new version.
func TestSkillChangedUpstream(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, examples, dir)
	docs, src := ourUpstream(t, "docs", dir)
	g := newGateway(t, []host.Origin{docs}, &host.Options{Approver: &allow{}, RefreshInterval: 10 * time.Millisecond}, nil)
	cs := clientOf(t, g, nil)
	if out, isErr := call(t, cs, "read_skill", map[string]any{"name": "code-review"}); isErr {
		t.Fatal(out)
	}
	checklist := filepath.Join(dir, "code-review", "references", "CHECKLIST.md")
	if err := os.WriteFile(checklist, []byte("# Checklist v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := src.Catalog().Reload()
	if err != nil {
		t.Fatal(err)
	}
	src.Swap(c)
	waitFor(t, "the changed skill to be re-listed", 10*time.Second, func() bool {
		out, isErr := call(t, cs, "read_skill_file", map[string]any{"skill": "code-review", "path": "references/CHECKLIST.md"})
		return isErr && strings.Contains(out, "changed upstream") && strings.Contains(out, `read_skill(name="code-review") again`)
	})
	if out, isErr := call(t, cs, "read_skill", map[string]any{"name": "code-review"}); isErr {
		t.Fatalf("reloading the changed skill: %s", out)
	}
	out, isErr := call(t, cs, "read_skill_file", map[string]any{"skill": "code-review", "path": "references/CHECKLIST.md"})
	if isErr || !strings.Contains(out, "# Checklist v2") {
		t.Errorf("after reloading: %s", out)
	}
}
