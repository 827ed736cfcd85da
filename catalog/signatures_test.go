package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/sigfile"
)

func TestSignaturesAttached(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/SKILL.md", "---\nname: a\ndescription: d\n---\nbody\n")
	write("b/SKILL.md", "---\nname: b\ndescription: d\n---\nbody\n")
	c, err := OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	unsignedID := c.ID()
	for _, s := range c.Skills() {
		if s.Signature != nil {
			t.Fatalf("%s: signature without a bundle", s.URI)
		}
	}

	write(sigfile.Path("a"), `{"bundle":1}`)
	write(sigfile.Path("b"), `{not json`)
	c2, err := c.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(c2.Skill("skill://a/SKILL.md").Signature); got != `{"bundle":1}` {
		t.Errorf("a: signature %q", got)
	}
	if c2.Skill("skill://b/SKILL.md").Signature != nil {
		t.Error("b: a bundle that is not JSON was attached")
	}
	if c2.ID() == unsignedID {
		t.Error("a new bundle kept the snapshot ID, so servers would keep sending the old entry")
	}
	if c.Skill("skill://a/SKILL.md").Signature != nil {
		t.Error("the previous snapshot's skill was modified")
	}
	diags := 0
	for _, d := range c2.Diagnostics() {
		if d.Rule == RuleSignature {
			diags++
			if !strings.Contains(d.Message, "not JSON") || d.Path != sigfile.Path("b") {
				t.Errorf("diagnostic %+v", d)
			}
		}
	}
	if diags != 1 {
		t.Errorf("%d signature diagnostics, want 1", diags)
	}
	for _, f := range c2.Skills() {
		for _, fl := range f.Files {
			if strings.Contains(fl.URI, ".skillport") {
				t.Errorf("bundle published as %s", fl.URI)
			}
		}
	}

	// Over the limit: refused, not read whole.
	write(sigfile.Path("a"), `"`+strings.Repeat("x", sigfile.MaxBytes)+`"`)
	c3, err := c2.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if c3.Skill("skill://a/SKILL.md").Signature != nil {
		t.Error("a bundle over the limit was attached")
	}

	// Removing the folder unsigns the skills again.
	if err := os.RemoveAll(filepath.Join(dir, ".skillport")); err != nil {
		t.Fatal(err)
	}
	c4, err := c3.Reload()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c4.Skills() {
		if s.Signature != nil {
			t.Errorf("%s: signature kept after its bundle was removed", s.URI)
		}
	}
	for _, d := range c4.Diagnostics() {
		if d.Rule == RuleSignature {
			t.Errorf("stale diagnostic %+v", d)
		}
	}
	if c4.ID() != unsignedID {
		t.Error("the unsigned tree's ID differs from before signing")
	}
}
