package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/skillserver"
)

// TestFilteredSkillsTakeNoName: a skill an origin's filter leaves out
// takes no part in naming. With "git-*" excluded on a, the only admitted
// git-workflow (b's) is "git-workflow", read_skill of it works, and no
// answer suggests a name that then fails; with or without visibility rules.
func TestFilteredSkillsTakeNoName(t *testing.T) {
	for _, perCaller := range []bool{false, true} {
		aDir, bDir := t.TempDir(), t.TempDir()
		writeSkill(t, aDir, "git-workflow", "Branching rules of team a.")
		writeSkill(t, aDir, "pdf", "Fill PDF forms.")
		writeSkill(t, bDir, "git-workflow", "Branching rules of team b.")
		a, _ := ourUpstream(t, "a", aDir)
		b, _ := ourUpstream(t, "b", bDir)
		opts := &gateway.Options{Filters: map[string]*gateway.Filter{"a": {Exclude: []string{"git-*"}}}}
		if perCaller {
			opts.Visible = everyone
		}
		g := newGateway(t, []host.Origin{a, b}, nil, opts)
		<-g.Ready()
		cs := clientOf(t, g, nil)
		out, isErr := call(t, cs, "read_skill", map[string]any{"name": "git-workflow"})
		if isErr || !strings.Contains(out, "Branching") && !strings.Contains(out, "git-workflow") {
			t.Errorf("perCaller=%t: read_skill(git-workflow) = %q, want b's skill", perCaller, out)
		}
		if strings.Contains(out, "ambiguous") || strings.Contains(out, "a:git-workflow") {
			t.Errorf("perCaller=%t: the filtered skill leaks into the answer: %q", perCaller, out)
		}
		for _, name := range []string{"b:git-workflow", "b__git-workflow"} {
			if out, isErr := call(t, cs, "read_skill", map[string]any{"name": name}); isErr {
				t.Errorf("perCaller=%t: read_skill(%s) = %q", perCaller, name, out)
			}
		}
		if out, isErr := call(t, cs, "read_skill", map[string]any{"name": "a:git-workflow"}); !isErr || !strings.Contains(out, "unknown") {
			t.Errorf("perCaller=%t: read_skill(a:git-workflow) = %q, want unknown", perCaller, out)
		}
		ins := cs.InitializeResult().Instructions
		if !strings.Contains(ins, "<name>git-workflow</name>") || strings.Contains(ins, "__git-workflow") {
			t.Errorf("perCaller=%t: catalog does not name b's skill git-workflow:\n%s", perCaller, ins)
		}
		if out, _ := call(t, cs, "search_skills", map[string]any{"query": "branching"}); !strings.Contains(out, "<name>git-workflow</name>") {
			t.Errorf("perCaller=%t: search_skills: %q", perCaller, out)
		}
	}
}

// TestReadSkillHidesLocalPaths: read_skill and the catalog of a local
// origin show the origin label and the skill path, never the gateway
// machine's absolute folder (the client may be remote).
func TestReadSkillHidesLocalPaths(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "greeting", "Greets people.")
	g := newGateway(t, []host.Origin{{Label: "local", Dir: dir}}, nil, nil)
	<-g.Ready()
	cs := clientOf(t, g, nil)
	out, isErr := call(t, cs, "read_skill", map[string]any{"name": "greeting"})
	if isErr {
		t.Fatal(out)
	}
	if strings.Contains(out, dir) {
		t.Errorf("read_skill shows the absolute path %s:\n%s", dir, out)
	}
	if !strings.Contains(out, "local:greeting") {
		t.Errorf("read_skill does not name the skill by origin and path:\n%s", out)
	}
	if ins := cs.InitializeResult().Instructions; strings.Contains(ins, dir) {
		t.Errorf("the catalog shows the absolute path %s:\n%s", dir, ins)
	}
	if out, _ := call(t, cs, "search_skills", map[string]any{"query": "greets"}); strings.Contains(out, dir) {
		t.Errorf("search_skills shows the absolute path %s:\n%s", dir, out)
	}
}

// everyone is a visibility rule that shows every skill to every caller.
func everyone(*skillserver.Caller, *catalog.Skill) bool { return true }

// TestPerCallerListsArePrivate: with visibility rules, what a caller is
// shown by prompts/list, server/discover (the instructions' catalog) and
// the resources depends on the caller, so no shared cache may keep it:
// cacheScope is "private" (issue 25.11). tools/list, the same for every
// caller, stays public.
func TestPerCallerListsArePrivate(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "greeting", "Greets people.")
	up, _ := ourUpstream(t, "docs", dir)
	g := newGateway(t, []host.Origin{up}, nil, &gateway.Options{Visible: everyone})
	alice, _ := perCallerSessions(t, g, nil)
	ctx := context.Background()
	prompts, err := alice.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts) != 1 || prompts.CacheScope != "private" {
		t.Errorf("prompts/list: %d prompts, cacheScope %q, want 1 and private", len(prompts.Prompts), prompts.CacheScope)
	}
	res, err := alice.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CacheScope != "private" {
		t.Errorf("resources/list: cacheScope %q, want private", res.CacheScope)
	}
	tools, err := alice.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tools.CacheScope != "public" {
		t.Errorf("tools/list: cacheScope %q, want public (one definition for every caller)", tools.CacheScope)
	}
}
