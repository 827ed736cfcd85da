package access_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillserver"
)

func sk(t *testing.T, path, metadata string) *catalog.Skill {
	t.Helper()
	name := path[strings.LastIndex(path, "/")+1:]
	md := fmt.Sprintf("---\nname: %s\ndescription: A skill for testing visibility rules.\n%s---\n", name, metadata)
	doc, err := skill.Parse([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	return &catalog.Skill{URI: "skill://" + path + "/SKILL.md", Path: path, Name: name, Frontmatter: doc.Frontmatter}
}

func TestVisible(t *testing.T) {
	rules, err := access.Parse("rules.jsonc", []byte(`{"rules": [
		{"anyone": true, "paths": ["public"]},
		{"scope": "s:internal", "paths": ["internal/"]},
		{"group": "ops", "metadata": {"team": "ops"}},
		{"subject": "root", "paths": [""]},
		{"group": "ops", "scope": "s:x", "paths": ["both"]},
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	pub, pubLike := sk(t, "public/a", ""), sk(t, "publicity/b", "")
	internal, ops, both := sk(t, "internal/c", ""), sk(t, "team/d", "metadata:\n  team: ops\n"), sk(t, "both/e", "")
	opsOther := sk(t, "team/f", "metadata:\n  team: sales\n")
	all := []*catalog.Skill{pub, pubLike, internal, ops, both, opsOther}
	for _, tc := range []struct {
		name string
		c    *skillserver.Caller
		want []*catalog.Skill
	}{
		{"anonymous", nil, []*catalog.Skill{pub}},
		{"scope", &skillserver.Caller{Subject: "u", Scopes: []string{"s:internal"}}, []*catalog.Skill{pub, internal}},
		{"group", &skillserver.Caller{Subject: "u", Groups: []string{"ops"}}, []*catalog.Skill{pub, ops}},
		{"group and scope, both needed", &skillserver.Caller{Groups: []string{"ops"}, Scopes: []string{"s:x"}}, []*catalog.Skill{pub, ops, both}},
		{"subject", &skillserver.Caller{Subject: "root"}, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range all {
				want := false
				for _, w := range tc.want {
					want = want || w == s
				}
				if got := rules.Visible(tc.c, s); got != want {
					t.Errorf("Visible(%+v, %s) = %v, want %v", tc.c, s.Path, got, want)
				}
			}
		})
	}
	var none access.Rules
	if none.Visible(&skillserver.Caller{Subject: "root"}, pub) {
		t.Error("no rules must show nothing")
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"no caller", `{"rules":[{"paths":["a"]}]}`, "rules[0] names no caller"},
		{"absolute path", `{"rules":[{"anyone":true,"paths":["/a"]}]}`, "rules[0].paths[0]"},
		{"dotdot", `{"rules":[{"anyone":true,"paths":["a/../b"]}]}`, "relative skill path"},
		{"unknown key", "{\"rules\":[{\"anyone\":true,\n \"groups\":[\"x\"]}]}", "rules.jsonc:2"},
		{"wrong type", `{"rules":[{"anyone":"yes"}]}`, "rules.jsonc:1"},
		{"too many", `{"rules":[` + strings.Repeat(`{"anyone":true},`, access.MaxRules+1) + `]}`, "more than the 1000 allowed"},
		{"too big", `{"rules":[]}` + strings.Repeat(" ", access.MaxFileBytes), "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := access.Parse("rules.jsonc", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rules.jsonc")
	if err := os.WriteFile(p, []byte(`{"rules":[]}`+strings.Repeat("\n", 2*access.MaxFileBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := access.Load(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("Load of an oversized file: %v, want an error naming it", err)
	}
	if _, err := access.Load(p + ".missing"); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"rules":[{"anyone":true,"paths":["a/"]},{"group":"g","metadata":{"k":"v"}}]}`))
	f.Add([]byte(`{"rules":[{"scope":"s" /* c */,}],}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := access.Parse("f.jsonc", data)
		if err != nil {
			return
		}
		if len(r.Rules) > access.MaxRules {
			t.Fatalf("%d rules accepted", len(r.Rules))
		}
		r.Visible(nil, &catalog.Skill{Path: "a/b"})
		r.Visible(&skillserver.Caller{Subject: "s", Scopes: []string{"s"}, Groups: []string{"g"}}, &catalog.Skill{Path: "a"})
	})
}
