package skillserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"path"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/skillserver"
)

// storedFile is a file row of a store that keeps digests: what listing
// needs, and the key of the content.
type storedFile struct {
	Digest string
	Size   int64
	Text   bool
}

// storedSkill is a skill row: its path, its frontmatter (parsed once, when
// the skill was published) and its files by path relative to its root.
type storedSkill struct {
	Path        string
	Frontmatter json.RawMessage
	Files       map[string]storedFile
}

// digestStore stands for a database: skill rows, and content by digest,
// which only a read touches.
type digestStore struct {
	skills []storedSkill
	blobs  map[string][]byte // by digest
	reads  atomic.Int64
}

// put publishes a skill: the one time its bytes are hashed.
func (s *digestStore) put(p, frontmatter string, files map[string]string) {
	row := storedSkill{Path: p, Frontmatter: json.RawMessage(frontmatter), Files: map[string]storedFile{}}
	for rel, content := range files {
		sum := sha256.Sum256([]byte(content))
		d := "sha256:" + hex.EncodeToString(sum[:])
		row.Files[rel] = storedFile{Digest: d, Size: int64(len(content)), Text: true}
		s.blobs[d] = []byte(content)
	}
	s.skills = append(s.skills, row)
}

// ListSkills implements skillserver.SkillSource: it describes the stored
// skills from their rows alone; catalog.File literals carry the stored
// digest and size, no content.
func (s *digestStore) ListSkills(context.Context) ([]*catalog.Skill, error) {
	var out []*catalog.Skill
	for _, row := range s.skills {
		root := catalog.DefaultScheme + "://" + row.Path
		sk := &catalog.Skill{URI: root + "/" + catalog.FileNameSKILL, Root: root, Path: row.Path, Dir: row.Path}
		if err := json.Unmarshal(row.Frontmatter, &sk.Frontmatter); err != nil {
			return nil, fmt.Errorf("the frontmatter of %s: %w", row.Path, err)
		}
		sk.Name = sk.Frontmatter.Name()
		for rel, f := range row.Files {
			name := path.Base(rel)
			sk.Files = append(sk.Files, &catalog.File{
				URI: root + "/" + rel, Path: row.Path + "/" + rel, Name: name,
				Size: f.Size, Digest: f.Digest, Text: f.Text, MIMEType: catalog.MIMEType(name, f.Text),
			})
			sk.Size += f.Size
		}
		out = append(out, sk)
	}
	return out, nil
}

// ReadFile implements skillserver.SkillSource: it fetches content by
// digest, on resources/read only.
func (s *digestStore) ReadFile(_ context.Context, f *catalog.File) ([]byte, error) {
	s.reads.Add(1)
	b, ok := s.blobs[f.Digest]
	if !ok {
		return nil, fmt.Errorf("%s: %w", f.URI, catalog.ErrChanged)
	}
	return b, nil
}

// A store that keeps digests is a SkillSource that lists its skills from
// its rows, without any file's bytes; the server builds the maps it
// answers from, and reads the content by digest only when a client reads
// a file. (A store that knows when its rows change implements
// skillserver.ChangeNotifier too, and is listed once per change rather
// than once per request.)
func ExampleSkillSource_digests() {
	store := &digestStore{blobs: map[string][]byte{}}
	store.put("team/greet", `{"name":"greet","description":"Greet users by name."}`, map[string]string{
		"SKILL.md":       "---\nname: greet\ndescription: Greet users by name.\n---\nSay hello.\n",
		"examples/hi.md": "Hi, Ann!\n",
	})

	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "team"}, nil)
	if _, err := skillserver.Attach(s, store, nil); err != nil {
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

	res, err := session.ListResources(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res.Resources {
		if strings.HasPrefix(r.URI, "skill://team/") { // the server lists its index too
			fmt.Println(r.URI, r.Size, "bytes")
		}
	}
	for entry, err := range c.List(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("listed", entry.URI, "after", store.reads.Load(), "reads")
	}

	rr, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://team/greet/examples/hi.md"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read %q after %d read\n", rr.Contents[0].Text, store.reads.Load())
	// Output:
	// skill://team/greet/SKILL.md 65 bytes
	// skill://team/greet/examples/hi.md 9 bytes
	// listed skill://team/greet/SKILL.md after 0 reads
	// read "Hi, Ann!\n" after 1 read
}
