package skillserver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/skillserver"
)

// memory is a custom source: skills kept in a map, as a database-backed
// registry would keep them. It lists and reads; the server derives the
// rest (files, directories, paging, cursors).
type memory struct {
	skills  []*catalog.Skill
	content map[string][]byte
}

func (m *memory) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	// skillserver.CallerFromContext(ctx) says who is asking, for per-user answers.
	return m.skills, nil
}

func (m *memory) ReadFile(_ context.Context, f *catalog.File) ([]byte, error) {
	return m.content[f.URI], nil
}

// A custom source is two methods; catalog.NewSkill describes a skill from
// its files.
func ExampleSkillSource() {
	files := map[string][]byte{
		"SKILL.md":       []byte("---\nname: greet\ndescription: Greet users by name.\n---\nSay hello.\n"),
		"examples/hi.md": []byte("Hi, Ann!\n"),
	}
	sk, err := catalog.NewSkill("skill://team/greet", files)
	if err != nil {
		log.Fatal(err)
	}
	src := &memory{skills: []*catalog.Skill{sk}, content: map[string][]byte{}}
	for rel, data := range files {
		src.content[sk.Root+"/"+rel] = data
	}

	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "team"}, nil)
	if _, err := skillserver.Attach(s, src, nil); err != nil {
		log.Fatal(err)
	}
	serverT, clientT := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, serverT, nil); err != nil {
		log.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil)
	skillclient.Register(client)
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
		f, err := c.Read(ctx, entry, "examples/hi.md")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s", entry.URI, f.Data)
	}
	// Output:
	// skill://team/greet/SKILL.md: Hi, Ann!
}
