package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/skillserver"
)

// TestGatewayHiddenNested: a skill hidden from the caller whose folder
// sits inside a skill it sees is absent from the visible skill's tools:
// read_skill lists none of its files, read_skill_file and list_skill_dir
// answer for its paths as for paths that do not exist.
func TestGatewayHiddenNested(t *testing.T) {
	dir := t.TempDir()
	for p, body := range map[string]string{
		"guide/SKILL.md":      "---\nname: guide\ndescription: The guide for everyone.\nmetadata:\n  audience: all\n---\nRead on.\n",
		"guide/intro.md":      "# Intro\n",
		"guide/ops/SKILL.md":  "---\nname: ops\ndescription: The ops team's runbook.\nmetadata:\n  team: ops\n---\nSECRET-RUNBOOK\n",
		"guide/ops/secret.md": "SECRET-BYTES\n",
	} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, _ := ourUpstream(t, "docs", dir)
	rules, err := access.Parse("rules.jsonc", []byte(`{"rules": [
		{"anyone": true, "metadata": {"audience": "all"}},
		{"group": "ops", "metadata": {"team": "ops"}},
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, []host.Origin{docs}, nil, &gateway.Options{Visible: rules.Visible})
	<-g.Ready()
	bob := skillserver.ContextWithCaller(context.Background(), &skillserver.Caller{Subject: "bob"})
	olga := skillserver.ContextWithCaller(context.Background(), &skillserver.Caller{Subject: "olga", Groups: []string{"ops"}})

	body, err := g.ReadSkill(bob, "guide")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "intro.md") || strings.Contains(body, "ops/") || strings.Contains(body, "secret") {
		t.Errorf("bob's read_skill of guide:\n%s", body)
	}
	if body, err := g.ReadSkill(olga, "guide"); err != nil || !strings.Contains(body, "ops/secret.md") {
		t.Errorf("olga's read_skill of guide: %v\n%s", err, body)
	}
	errText := func(s string, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		return s
	}
	for _, tc := range []struct{ hidden, absent string }{
		{"ops/secret.md", "nope/secret.md"},
		{"ops/SKILL.md", "nope/SKILL.md"},
	} {
		h := errText(g.ReadSkillFile(bob, "guide", tc.hidden))
		a := errText(g.ReadSkillFile(bob, "guide", tc.absent))
		if strings.ReplaceAll(h, "ops", "nope") != a {
			t.Errorf("read_skill_file %s: %s\nabsent %s: %s", tc.hidden, h, tc.absent, a)
		}
	}
	h := errText(g.ListSkillDir(bob, "guide", "ops"))
	a := errText(g.ListSkillDir(bob, "guide", "nope"))
	if strings.ReplaceAll(h, "ops", "nope") != a {
		t.Errorf("list_skill_dir ops: %s\nabsent: %s", h, a)
	}
	if root := errText(g.ListSkillDir(bob, "guide", "")); strings.Contains(root, "ops") || !strings.Contains(root, "intro.md") {
		t.Errorf("bob's list_skill_dir of guide's root: %s", root)
	}
	if got := errText(g.ReadSkillFile(olga, "guide", "ops/secret.md")); !strings.Contains(got, "SECRET-BYTES") {
		t.Errorf("olga's read_skill_file of ops/secret.md: %s", got)
	}
}
