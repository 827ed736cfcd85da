package gen_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/catalog/internal/gen"
	"github.com/skillport/skillport/skill"
)

// readTree returns every file of dir by slash path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	sa, err := gen.Options{Skills: 120, Seed: 7, Workers: 1}.Write(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := gen.Options{Skills: 120, Seed: 7, Workers: 3}.Write(b)
	if err != nil {
		t.Fatal(err)
	}
	if sa != sb {
		t.Fatalf("stats differ between worker counts: %+v vs %+v", sa, sb)
	}
	ta, tb := readTree(t, a), readTree(t, b)
	if len(ta) != sa.Files || len(ta) != len(tb) {
		t.Fatalf("file counts: %d, %d, stats say %d", len(ta), len(tb), sa.Files)
	}
	for p, x := range ta {
		if !bytes.Equal(x, tb[p]) {
			t.Fatalf("%s differs between two writes of the same options", p)
		}
	}

	c := t.TempDir()
	if _, err := gen.Write(c, 120, 8); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(readTree(t, c)["skill-00000/SKILL.md"], ta["skill-00000/SKILL.md"]) {
		t.Fatal("seeds 7 and 8 wrote the same SKILL.md")
	}
}

func TestWriteShape(t *testing.T) {
	dir := t.TempDir()
	st, err := gen.Write(dir, 400, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Nested == 0 || st.Prefixed == 0 || st.Binary == 0 {
		t.Fatalf("tree lacks nested skills, prefixes or binary files: %+v", st)
	}
	if st.Skills != 400+st.Nested {
		t.Fatalf("skills %d, want 400 + %d nested", st.Skills, st.Nested)
	}
	if per := float64(st.Files) / 400; per < 4.5 || per > 5.5 {
		t.Fatalf("%.2f files per skill, want about 5", per)
	}
	// Every skill is valid: the catalog publishes them all without a diagnostic.
	cat, err := catalog.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cat.Diagnostics() {
		t.Errorf("diagnostic: %s: %s: %s", d.Path, d.Rule, d.Message)
	}
	cs := cat.Stats()
	if cs.Skills != st.Skills || cs.Files != st.Files || cs.Bytes != st.Bytes {
		t.Fatalf("catalog sees %d skills, %d files, %d bytes; generator wrote %+v", cs.Skills, cs.Files, cs.Bytes, st)
	}
	if _, err := gen.Write(dir, 1, 1); err == nil {
		t.Fatal("writing into a non-empty directory succeeded")
	}
}

func TestWriteScale(t *testing.T) {
	small, large := t.TempDir(), t.TempDir()
	s1, err := gen.Options{Skills: 60, Seed: 3}.Write(small)
	if err != nil {
		t.Fatal(err)
	}
	s10, err := gen.Options{Skills: 60, Seed: 3, Scale: 10}.Write(large)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Files != s10.Files || s1.Skills != s10.Skills || s1.SkillMDSize != s10.SkillMDSize {
		t.Fatalf("scale changed the tree's shape: %+v vs %+v", s1, s10)
	}
	want := s1.SkillMDSize + 10*(s1.Bytes-s1.SkillMDSize)
	if s10.Bytes != want {
		t.Fatalf("scale 10 wrote %d bytes, want %d", s10.Bytes, want)
	}
	t1, t10 := readTree(t, small), readTree(t, large)
	for p, b := range t1 {
		b10, ok := t10[p]
		switch {
		case !ok:
			t.Fatalf("%s missing at scale 10", p)
		case filepath.Base(p) == "SKILL.md" && !bytes.Equal(b, b10):
			t.Fatalf("%s differs at scale 10", p)
		case filepath.Base(p) != "SKILL.md" && len(b10) != 10*len(b):
			t.Fatalf("%s: %d bytes at scale 10, %d at scale 1", p, len(b10), len(b))
		}
	}
}

// TestWriteInvalid checks that Options.Invalid makes exactly the skills it
// counts invalid, in its three ways, and changes nothing else.
func TestWriteInvalid(t *testing.T) {
	plain, bad := t.TempDir(), t.TempDir()
	o := gen.Options{Skills: 90, Seed: 5, RealWorld: true}
	sp, err := o.Write(plain)
	if err != nil {
		t.Fatal(err)
	}
	o.Invalid = 10
	sb, err := o.Write(bad)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Invalid != 9 || sp.Invalid != 0 || sb.Skills != sp.Skills || sb.Files != sp.Files {
		t.Fatalf("invalid skills %d (want 9), stats %+v vs %+v", sb.Invalid, sb, sp)
	}
	tp, tb := readTree(t, plain), readTree(t, bad)
	changed := 0
	for p, b := range tp {
		if !bytes.Equal(b, tb[p]) {
			if filepath.Base(p) != "SKILL.md" {
				t.Errorf("%s changed", p)
			}
			changed++
		}
	}
	if changed != sb.Invalid {
		t.Errorf("%d files changed, want the %d invalid SKILL.md", changed, sb.Invalid)
	}

	c, err := catalog.OpenDir(bad, &catalog.Options{AllowHardlinks: true})
	if err != nil {
		t.Fatal(err)
	}
	cs := c.Stats()
	if cs.Found != sb.Skills || cs.Invalid != sb.Invalid || cs.Skills != sb.Skills-sb.Invalid {
		t.Fatalf("catalog %+v; the tree has %d skills, %d invalid", cs, sb.Skills, sb.Invalid)
	}
	rules := map[string]bool{}
	for _, d := range c.Diagnostics() {
		if d.Severity == skill.Error {
			rules[d.Rule] = true
		}
	}
	for _, r := range []string{skill.RuleFrontmatterSyntax, skill.RuleNameFormat, skill.RuleFrontmatterMissing} {
		if !rules[r] {
			t.Errorf("no %s error; errors: %v", r, rules)
		}
	}
}
