package skillclient_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/skills"
	"github.com/skillport/skillport/wire"
)

// The client works on any session: register its methods on the
// mcp.Client, connect as usual, then list, get and read. Read verifies
// every byte against the server's entry.
func ExampleClient() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "docs"}, nil)
	served, err := skills.AddFS(server, fstest.MapFS{
		"pdf/SKILL.md":            {Data: []byte("---\nname: pdf\ndescription: Fill PDF forms.\n---\nSee references/FORMS.md.\n")},
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
	for entry, err := range c.List(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(entry.URI, "-", entry.Frontmatter.Description())
		md, err := c.Read(ctx, entry, "") // SKILL.md
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s", md.Document.Body)
		ref, err := c.Read(ctx, entry, "references/FORMS.md")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s (verified: %t): %s", ref.Path, ref.Verified, ref.Data)
	}
	// Output:
	// skill://pdf/SKILL.md - Fill PDF forms.
	// See references/FORMS.md.
	// references/FORMS.md (verified: true): Fill every field.
}

// VerifyResource is a pure check, for content that arrived some other way
// (a cache, a proxy): it passes only the bytes the entry vouches for.
func ExampleVerifyResource() {
	content := []byte("Fill every field.\n")
	entry := &wire.Skill{URI: "skill://pdf/SKILL.md", Resources: &wire.Resources{Files: []wire.SkillResource{
		{URI: "skill://pdf/references/FORMS.md", Digest: skillclient.Digest(content), Size: int64(len(content))},
	}}}
	fmt.Println(skillclient.VerifyResource(entry, "skill://pdf/references/FORMS.md", content))
	err := skillclient.VerifyResource(entry, "skill://pdf/references/FORMS.md", []byte("Fill no field.!!!\n"))
	fmt.Println(errors.Is(err, skillclient.ErrDigest), errors.Is(err, skillclient.ErrVerification))
	err = skillclient.VerifyResource(entry, "skill://pdf/scripts/run.sh", content)
	fmt.Println(err)
	// Output:
	// <nil>
	// true true
	// skill://pdf/scripts/run.sh: file not listed in the skill's resources; the content was discarded
}
