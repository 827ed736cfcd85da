package approval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/wire"
)

var files = []wire.SkillResource{
	{URI: "skill://a/SKILL.md", Digest: "sha256:" + strings.Repeat("1", 64), Size: 10},
	{URI: "skill://a/x.md", Digest: "sha256:" + strings.Repeat("2", 64), Size: 5},
}

func TestKeyBindsLabelURIAndSet(t *testing.T) {
	k := Key("docs", "skill://a/SKILL.md", files)
	swapped := []wire.SkillResource{files[1], files[0]}
	if Key("docs", "skill://a/SKILL.md", swapped) != k {
		t.Error("key depends on the order of resources")
	}
	if Key("other", "skill://a/SKILL.md", files) == k {
		t.Error("same key for another origin (A-51)")
	}
	rotated := []wire.SkillResource{files[0], {URI: files[1].URI, Digest: "sha256:" + strings.Repeat("3", 64), Size: 5}}
	if Key("docs", "skill://a/SKILL.md", rotated) == k {
		t.Error("same key after a file was rotated")
	}
	if Key("docs", "skill://a/SKILL.md", files[:1]) == k {
		t.Error("same key after a file was removed")
	}
}

func TestStorePersistsAtomicallyAndRevokes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cfg", "approvals.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	k := Key("docs", "skill://a/SKILL.md", files)
	if err := s.Save(k, Record{Label: "docs", URI: "skill://a/SKILL.md"}); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s2.Lookup(k); !ok {
		t.Fatal("approval not persisted")
	}
	if n, _ := s2.Revoke("docs", "skill://a/SKILL.md", k); n != 0 {
		t.Errorf("Revoke removed the current approval")
	}
	if n, _ := s2.Revoke("docs", "skill://a/SKILL.md", "other-key"); n != 1 {
		t.Errorf("Revoke removed %d, want 1", n)
	}
	s3, _ := Open(path)
	if _, ok := s3.Lookup(k); ok {
		t.Error("revocation not persisted")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestOpenCorruptFileSaysWhatToDo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.json")
	os.WriteFile(path, []byte("{not json"), 0o600)
	_, err := Open(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open = %v, want an error naming the file", err)
	}
}

func TestPolicy(t *testing.T) {
	p := &Policy{
		Allow: []Rule{{Origin: "docs", Skill: "*"}, {Origin: "dyn", Skill: "gen", Dynamic: true}},
		Deny:  []Rule{{Origin: "*", Skill: "evil"}},
	}
	ctx := context.Background()
	for _, c := range []struct {
		req  Request
		want bool
	}{
		{Request{Kind: Load, Origin: "docs", Name: "pdf"}, true},
		{Request{Kind: Load, Origin: "docs", Name: "evil"}, false},
		{Request{Kind: Load, Origin: "other", Name: "pdf"}, false},
		{Request{Kind: Load, Origin: "docs", Name: "pdf", Dynamic: true}, false},
		{Request{Kind: Load, Origin: "dyn", Name: "gen", Dynamic: true}, true},
		{Request{Kind: CrossOrigin, Origin: "docs", Target: "other"}, false},
		{Request{Kind: Exec, Origin: "docs"}, false},
	} {
		d, err := p.Approve(ctx, &c.req)
		if err != nil || d.Allow != c.want {
			t.Errorf("%+v: Allow=%v, want %v", c.req, d.Allow, c.want)
		}
	}
}

func TestPromptSanitisesAndParses(t *testing.T) {
	var out strings.Builder
	p := &Prompt{In: strings.NewReader("a\n"), Out: &out}
	d, err := p.Approve(context.Background(), &Request{Kind: Load, Origin: "docs", Name: "x", Description: "evil\x1b[2J\u202etext", Files: files})
	if err != nil || !d.Allow || !d.Remember || d.GrantTools {
		t.Fatalf("decision %+v, %v", d, err)
	}
	if strings.ContainsAny(out.String(), "\x1b\u202e") || !strings.Contains(out.String(), `evil\x1b[2J\u202etext`) {
		t.Errorf("prompt echoed control characters, or hid them: %q", out.String())
	}
	p = &Prompt{In: strings.NewReader("a\n"), Out: &out}
	d, _ = p.Approve(context.Background(), &Request{Kind: Load, Origin: "docs", Name: "x", Dynamic: true})
	if d.Allow || d.Remember {
		t.Errorf("dynamic skill approved 'always': %+v", d)
	}
}

func TestLoadPolicyShape(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ src, want string }{
		{"// team policy\n{\"allow\": [{\"origin\": \"docs\", \"skill\": \"*\",},],}", ""},
		{"{\n  \"alow\": [{\"origin\": \"docs\", \"skill\": \"*\"}]\n}", `p.json:2:3: unknown field "alow"`},
		{"[{\"origin\": \"docs\", \"skill\": \"*\"}]", "p.json:1:1: the top level: expected an object"},
		{"{\"allow\": {\"origin\": \"docs\", \"skill\": \"*\"}}", "p.json:1:11: allow: expected an array"},
		{"{\"allow\": [{\"origin\": \"docs\", \"skill\": \"*\", \"grant\": true}]}", `unknown field "grant"`},
	} {
		p := filepath.Join(dir, "p.json")
		if err := os.WriteFile(p, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadPolicy(p, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s:\n  error %v\n  want  %q", tc.src, err, tc.want)
		}
	}
}

// TestRevokeStaleComputesKeyOnlyWhenNeeded: the key of the current
// resources is computed once, and only for a skill that has an approval;
// approvals of other skills are untouched.
func TestRevokeStaleComputesKeyOnlyWhenNeeded(t *testing.T) {
	s, _ := Open("")
	k := Key("docs", "skill://a/SKILL.md", files)
	s.Save(k, Record{Label: "docs", URI: "skill://a/SKILL.md"})
	s.Save("old", Record{Label: "docs", URI: "skill://a/SKILL.md"})
	s.Save("b", Record{Label: "docs", URI: "skill://b/SKILL.md"})
	calls := 0
	current := func() string { calls++; return k }
	if n, err := s.RevokeStale("docs", "skill://c/SKILL.md", current); n != 0 || err != nil || calls != 0 {
		t.Errorf("no approval of c: removed %d (%v), key computed %d times; want 0, 0", n, err, calls)
	}
	if n, err := s.RevokeStale("docs", "skill://a/SKILL.md", current); n != 1 || err != nil || calls != 1 {
		t.Errorf("a: removed %d (%v), key computed %d times; want 1, 1", n, err, calls)
	}
	if _, ok := s.Lookup(k); !ok {
		t.Error("the current approval was removed")
	}
	if _, ok := s.Lookup("b"); !ok {
		t.Error("another skill's approval was removed")
	}
}
