package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/skills"
)

// A host gives a model four tools over every skill it discovered: here
// one MCP server, reached in memory. Every file the model reads is
// verified against the server's entry first.
func ExampleTools() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "docs"}, nil)
	served, err := skills.AddFS(server, fstest.MapFS{
		"pdf/SKILL.md":            {Data: []byte("---\nname: pdf\ndescription: Fill PDF forms.\n---\nRead references/FORMS.md first.\n")},
		"pdf/references/FORMS.md": {Data: []byte("Fill every field.\n")},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer served.Close()
	serverT, clientT := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverT, nil); err != nil {
		log.Fatal(err)
	}

	// The user approves loading skills; a real host asks them.
	allow := approval.Func(func(context.Context, *approval.Request) (approval.Decision, error) {
		return approval.Decision{Allow: true}, nil
	})
	h, err := host.New([]host.Origin{{Label: "docs", Transport: clientT}},
		&host.Options{Approver: allow, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	if err := h.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	tools := h.Tools()
	for _, d := range tools.Definitions() {
		fmt.Println("tool:", d.Name)
	}
	// Files are read only while the model acts on the skill.
	_, err = tools.Call(ctx, host.ToolReadSkillFile, json.RawMessage(`{"skill": "pdf", "path": "references/FORMS.md"}`))
	fmt.Println("error:", err)
	if _, err := tools.Call(ctx, host.ToolReadSkill, json.RawMessage(`{"name": "pdf"}`)); err != nil {
		log.Fatal(err)
	}
	out, err := tools.Call(ctx, host.ToolReadSkillFile, json.RawMessage(`{"skill": "pdf", "path": "references/FORMS.md"}`))
	if err != nil {
		log.Fatal(err)
	}
	// The file sits inside a wrapper whose boundary is random for each
	// response; UntrustedContent returns the exact bytes inside it.
	content, ok := host.UntrustedContent(out)
	fmt.Println(strings.SplitN(out, "\n", 2)[0])
	fmt.Printf("wrapped: %v, content: %q\n", ok, content)
	// Output:
	// tool: read_skill
	// tool: read_skill_file
	// tool: list_skill_dir
	// tool: search_skills
	// error: skill not loaded: call read_skill(name="pdf") first
	// <skill_file skill="pdf" path="references/FORMS.md" source="mcp:docs" uri="skill://pdf/references/FORMS.md" trust="untrusted">
	// wrapped: true, content: "Fill every field.\n"
}
