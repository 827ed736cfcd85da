package skills_test

import (
	"context"
	"fmt"
	"log"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/skills"
)

// Serving a folder of skills is one call; here over in-memory transports,
// for a local agent &mcp.StdioTransport{}.
func ExampleServe() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	serverT, clientT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- skills.Serve(ctx, "testdata/skills", serverT, nil) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil)
	if err := skillclient.Register(client); err != nil {
		log.Fatal(err)
	}
	session, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	for s, err := range skillclient.New(session, nil).List(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(s.URI)
	}
	session.Close()
	fmt.Println("served until the client left:", <-done)
	// Output:
	// skill://acme/refunds/SKILL.md
	// skill://pdf/SKILL.md
	// served until the client left: <nil>
}

// Adding skills to a server that already has tools is one call too.
func ExampleAddDirectory() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "billing"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "refund"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	served, err := skills.AddDirectory(server, "testdata/skills", &skills.Options{Watch: true})
	if err != nil {
		log.Fatal(err)
	}
	defer served.Close()

	serverT, clientT := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverT, nil); err != nil {
		log.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil)
	if err := skillclient.Register(client); err != nil {
		log.Fatal(err)
	}
	session, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	c := skillclient.New(session, nil)
	entry, err := c.Get(ctx, "skill://pdf/SKILL.md")
	if err != nil {
		log.Fatal(err)
	}
	f, err := c.Read(ctx, entry, "references/FORMS.md")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s verified=%t: %s", f.Path, f.Verified, f.Data)
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("tool:", t.Name)
	}
	// Output:
	// references/FORMS.md verified=true: Fill every field.
	// tool: refund
}

// Any fs.FS serves: an embed.FS compiled into the binary, or a tree built
// in memory as here.
func ExampleAddFS() {
	tree := fstest.MapFS{
		"hello/SKILL.md": {Data: []byte("---\nname: hello\ndescription: Greet the user.\n---\nSay hello.\n")},
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter"}, nil)
	served, err := skills.AddFS(server, tree, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer served.Close()
	for _, s := range served.Catalog().Skills() {
		fmt.Println(s.URI, s.Frontmatter.Description())
	}
	// Output:
	// skill://hello/SKILL.md Greet the user.
}
