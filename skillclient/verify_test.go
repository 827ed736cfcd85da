package skillclient_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/wire"
)

const skillMD = "---\nname: pdf\ndescription: PDFs.\n---\n# PDF\n"

func entry(t testing.TB, files map[string]string) *wire.Skill {
	t.Helper()
	var fm skill.Frontmatter
	if err := json.Unmarshal([]byte(`{"name":"pdf","description":"PDFs."}`), &fm); err != nil {
		t.Fatal(err)
	}
	res := &wire.Resources{}
	for uri, content := range files {
		res.Files = append(res.Files, wire.SkillResource{URI: uri, Digest: skillclient.Digest([]byte(content)), Size: int64(len(content))})
	}
	return &wire.Skill{URI: "skill://pdf/SKILL.md", Frontmatter: fm, Resources: res}
}

func TestVerifyResource(t *testing.T) {
	e := entry(t, map[string]string{"skill://pdf/SKILL.md": skillMD, "skill://pdf/a.txt": "abc"})
	dyn := entry(t, nil)
	dyn.Resources = &wire.Resources{Dynamic: true}
	for _, tc := range []struct {
		name    string
		entry   *wire.Skill
		uri     string
		content string
		want    error
	}{
		{"listed and equal", e, "skill://pdf/a.txt", "abc", nil},
		{"unlisted", e, "skill://pdf/b.txt", "abc", skillclient.ErrUnlisted},
		{"longer", e, "skill://pdf/a.txt", "abcd", skillclient.ErrSize},
		{"same size, other bytes", e, "skill://pdf/a.txt", "abd", skillclient.ErrDigest},
		{"dynamic", dyn, "skill://pdf/a.txt", "abc", skillclient.ErrDynamic},
		{"no resources", &wire.Skill{URI: "skill://pdf/SKILL.md"}, "skill://pdf/a.txt", "abc", skillclient.ErrInvalidEntry},
		{"nil entry", nil, "skill://pdf/a.txt", "abc", skillclient.ErrInvalidEntry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := skillclient.VerifyResource(tc.entry, tc.uri, []byte(tc.content))
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err != nil && tc.want != skillclient.ErrDynamic && tc.want != skillclient.ErrInvalidEntry && !errors.Is(err, skillclient.ErrVerification) {
				t.Fatalf("%v does not match ErrVerification", err)
			}
		})
	}
}

func TestVerifySkillMD(t *testing.T) {
	e := entry(t, map[string]string{"skill://pdf/SKILL.md": skillMD})
	doc, err := skillclient.VerifySkillMD(e, []byte(skillMD))
	if err != nil || doc.Frontmatter.Description() != "PDFs." {
		t.Fatalf("got %v, %v", doc, err)
	}
	other := strings.Replace(skillMD, "PDFs.", "PDF!.", 1)
	if _, err := skillclient.VerifySkillMD(e, []byte(other)); !errors.Is(err, skillclient.ErrDigest) {
		t.Fatalf("changed SKILL.md: got %v, want ErrDigest", err)
	}
	// A "dynamic" skill has no digest, but its frontmatter must still be the entry's.
	dyn := entry(t, nil)
	dyn.Resources = &wire.Resources{Dynamic: true}
	_, err = skillclient.VerifySkillMD(dyn, []byte(other))
	var ve *skillclient.VerifyError
	if !errors.Is(err, skillclient.ErrFrontmatter) || !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0] != "description" {
		t.Fatalf("dynamic SKILL.md with another description: got %v", err)
	}
	if _, err := skillclient.VerifySkillMD(dyn, []byte("no frontmatter")); !errors.Is(err, skillclient.ErrEncoding) {
		t.Fatalf("SKILL.md without frontmatter: got %v, want ErrEncoding", err)
	}
}

func TestContents(t *testing.T) {
	const uri = "skill://pdf/SKILL.md"
	for _, tc := range []struct {
		name string
		rr   *mcp.ReadResourceResult
		want string
		err  bool
	}{
		{"text", &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "x"}}}, "x", false},
		{"blob", &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Blob: []byte("y")}}}, "y", false},
		{"empty file", &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri}}}, "", false},
		{"nil result", nil, "", true},
		{"no items", &mcp.ReadResourceResult{}, "", true},
		{"nil item", &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{nil}}, "", true},
		{"two items", &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "x"}, {URI: uri, Text: "x"}}}, "", true},
		{"other URI", &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri + "x", Text: "x"}}}, "", true},
		{"text and blob", &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "x", Blob: []byte("x")}}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _, err := skillclient.Contents(tc.rr, uri)
			if tc.err {
				if !errors.Is(err, skillclient.ErrContents) {
					t.Fatalf("got %q, %v; want ErrContents", data, err)
				}
				return
			}
			if err != nil || string(data) != tc.want {
				t.Fatalf("got %q, %v; want %q", data, err, tc.want)
			}
		})
	}
}

func TestValidateEntry(t *testing.T) {
	ok := entry(t, map[string]string{"skill://pdf/SKILL.md": skillMD})
	if err := skillclient.ValidateEntry(ok); err != nil {
		t.Fatal(err)
	}
	if sk, err := skillclient.ParseEntry(ok); err != nil || sk.Root != "skill://pdf" || sk.Name != "pdf" {
		t.Fatalf("ParseEntry = %+v, %v", sk, err)
	}
	for name, mutate := range map[string]func(*wire.Skill){
		"not a SKILL.md URI":    func(s *wire.Skill) { s.URI = "skill://pdf/README.md" },
		"name differs from URI": func(s *wire.Skill) { s.URI = "skill://other/SKILL.md" },
		"no resources":          func(s *wire.Skill) { s.Resources = nil },
		"empty resources":       func(s *wire.Skill) { s.Resources = &wire.Resources{Files: []wire.SkillResource{}} },
		"file outside the root": func(s *wire.Skill) {
			s.Resources.Files = append(s.Resources.Files, wire.SkillResource{URI: "skill://other/x", Digest: s.Resources.Files[0].Digest})
		},
		"listed twice": func(s *wire.Skill) { s.Resources.Files = append(s.Resources.Files, s.Resources.Files[0]) },
		"listed twice in a long manifest": func(s *wire.Skill) {
			// Past the files a scan compares, where a map finds duplicates.
			for i := range 20 {
				s.Resources.Files = append(s.Resources.Files, wire.SkillResource{URI: fmt.Sprintf("skill://pdf/f%d.md", i), Digest: s.Resources.Files[0].Digest, Size: 1})
			}
			s.Resources.Files = append(s.Resources.Files, s.Resources.Files[5])
		},
		"file URI invalid": func(s *wire.Skill) {
			s.Resources.Files = append(s.Resources.Files, wire.SkillResource{URI: "skill://pdf/%2e%2e/x", Digest: s.Resources.Files[0].Digest})
		},
		"bad digest": func(s *wire.Skill) { s.Resources.Files[0].Digest = "md5:00" },
		"negative size": func(s *wire.Skill) {
			s.Resources.Files[0].Size = -2 // -1 is SizeUnknown, a missing size
		},
		"no SKILL.md listed": func(s *wire.Skill) { s.Resources.Files[0].URI = "skill://pdf/a.md" },
	} {
		t.Run(name, func(t *testing.T) {
			e := entry(t, map[string]string{"skill://pdf/SKILL.md": skillMD})
			mutate(e)
			if err := skillclient.ValidateEntry(e); !errors.Is(err, skillclient.ErrInvalidEntry) {
				t.Fatalf("got %v, want ErrInvalidEntry", err)
			}
			if sk, err := skillclient.ParseEntry(e); sk != nil || !errors.Is(err, skillclient.ErrInvalidEntry) {
				t.Fatalf("ParseEntry = %+v, %v; want ErrInvalidEntry", sk, err)
			}
		})
	}
}

// FuzzValidateEntry feeds arbitrary entries, as a hostile server could
// send them, through decoding, validation and verification: nothing
// panics, and what validates verifies only its own listed bytes.
func FuzzValidateEntry(f *testing.F) {
	good, _ := json.Marshal(entry(f, map[string]string{"skill://pdf/SKILL.md": skillMD}))
	f.Add(good, []byte(skillMD))
	f.Add([]byte(`{"uri":"skill://pdf/SKILL.md","frontmatter":{"name":"pdf","description":"x"},"resources":"dynamic"}`), []byte("---\nname: pdf\n---\n"))
	f.Add([]byte(`{"uri":"skill://a/../SKILL.md","frontmatter":{},"resources":[]}`), []byte{})
	f.Fuzz(func(t *testing.T, raw, content []byte) {
		var s wire.Skill
		if json.Unmarshal(raw, &s) != nil {
			return
		}
		if skillclient.ValidateEntry(&s) != nil {
			return
		}
		if _, err := skillclient.VerifySkillMD(&s, content); err == nil && !s.Resources.Dynamic {
			if err := skillclient.VerifyResource(&s, s.URI, content); err != nil {
				t.Fatalf("VerifySkillMD passed content VerifyResource refuses: %v", err)
			}
		}
	})
}
