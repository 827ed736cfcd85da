package skillclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/wire"
)

// rawPage sends any JSON as a skills/list result.
type rawPage struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawPage) MarshalJSON() ([]byte, error) { return r.raw, nil }

// rawServer answers skills/list with page, verbatim.
func rawServer(t *testing.T, page string) *skillclient.Client {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "raw"}, nil)
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodListSkills, func(context.Context, *mcp.ServerSession, *wire.ListSkillsParams) (*rawPage, error) {
		return &rawPage{raw: json.RawMessage(page)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
	skillclient.Register(c)
	cs, err := c.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return skillclient.New(cs, nil)
}

func entryJSON(name, resources string) string {
	const d = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	if resources == "" {
		resources = `[{"uri":"skill://` + name + `/SKILL.md","digest":"` + d + `","size":10}]`
	}
	return `{"uri":"skill://` + name + `/SKILL.md","frontmatter":{"name":"` + name + `","description":"Skill ` + name + `."},"resources":` + resources + `}`
}

// TestOneHostileEntryHidesNothing is issue 26's probe: three skills listed,
// the middle one malformed. skillclient.List decoded the page strictly and
// yielded nothing; it yields the two good skills and the bad one as an
// error naming it, as the host does.
func TestOneHostileEntryHidesNothing(t *testing.T) {
	for name, middle := range map[string]string{
		"resources 42":              entryJSON("bad", "42"),
		"duplicate frontmatter key": `{"uri":"skill://bad/SKILL.md","frontmatter":{"name":"bad","name":"other","description":"x"},"resources":"dynamic"}`,
		"duplicate entry key":       `{"uri":"skill://bad/SKILL.md","uri":"skill://a/SKILL.md","frontmatter":{"name":"bad","description":"x"},"resources":"dynamic"}`,
		"not an object":             `"skill://bad/SKILL.md"`,
		"size as a string":          entryJSON("bad", `[{"uri":"skill://bad/SKILL.md","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","size":"10"}]`),
	} {
		t.Run(name, func(t *testing.T) {
			page := `{"resultType":"complete","ttlMs":0,"cacheScope":"public","skills":[` + entryJSON("first", "") + `,` + middle + `,` + entryJSON("third", "") + `]}`
			c := rawServer(t, page)
			var got []string
			var errs []error
			for s, err := range c.List(context.Background()) {
				if err != nil {
					errs = append(errs, err)
					continue
				}
				got = append(got, s.Frontmatter.Name())
			}
			if strings.Join(got, ",") != "first,third" {
				t.Errorf("listed %v, want first and third", got)
			}
			var ee *skillclient.EntryError
			if len(errs) != 1 || !errors.As(errs[0], &ee) || !errors.Is(errs[0], skillclient.ErrInvalidEntry) {
				t.Fatalf("errors %v, want one EntryError for the middle entry", errs)
			}
			want := "skill://bad/SKILL.md"
			if name == "not an object" || name == "duplicate entry key" {
				want = "page 1, entry 2" // nothing in it names it
			}
			if !strings.Contains(errs[0].Error(), want) {
				t.Errorf("error %q does not name the bad entry", errs[0])
			}
		})
	}
}
