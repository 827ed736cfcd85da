package scan

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillport/skillport/catalog"
)

// readFixture reads testdata/rules/NAME as a skill; its allowed-tools
// frontmatter line, if any, is split with SplitTools.
func readFixture(t *testing.T, name string) *Skill {
	t.Helper()
	root := filepath.Join("testdata", "rules", name)
	s := &Skill{Path: "fixtures/" + name}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		s.Files = append(s.Files, File{Path: filepath.ToSlash(rel), Data: data})
		if rel == "SKILL.md" {
			for _, line := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(line, "allowed-tools:"); ok {
					s.AllowedTools = SplitTools(strings.TrimSpace(v))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keys(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%d:%s:%s", f.File, f.Line, f.RuleID, f.Level))
	}
	slices.Sort(out)
	return out
}

// Each built-in rule on a fixture skill that attacks with it: exactly the
// findings expected, where they are.
func TestBuiltinRules(t *testing.T) {
	tests := []struct {
		fixture string
		opts    Options
		want    []string
	}{
		{"bidi", Options{}, []string{"SKILL.md:8:hidden-unicode:error"}},
		{"zero-width", Options{}, []string{"SKILL.md:8:hidden-unicode:error"}},
		{"tags", Options{}, []string{"SKILL.md:8:hidden-unicode:error"}},
		{"comment", Options{}, []string{"SKILL.md:10:html-comment-instructions:warning"}},
		{"download", Options{}, []string{"SKILL.md:11:download-exec:error", "scripts/run.sh:2:download-exec:error", "scripts/setup.ps1:2:download-exec:error"}},
		{"self-modify", Options{}, []string{"SKILL.md:8:self-modify:warning", "scripts/learn.sh:2:self-modify:warning"}},
		{"secrets", Options{}, []string{"scripts/deploy.env:1:secret:error", "scripts/deploy.env:2:secret:error", "scripts/deploy.env:3:secret:error", "scripts/id_ed25519:1:secret:error"}},
		{"tools", Options{AllowedTools: []string{"Read", "Bash(git diff:*)"}}, []string{"SKILL.md:0:allowed-tools:error"}},
		{"tools", Options{AllowedTools: []string{"Read", "Write", "Bash"}}, nil},
		{"tools", Options{AllowedTools: []string{"*"}}, nil},
		{"tools", Options{}, nil}, // no namespace setting: nothing to check against
		// The legitimate uses of each pattern: a BOM, emoji joiners and a
		// flag's tags, Persian's non-joiner, marker comments, placeholder
		// credentials, a download that is not run, another file updated.
		{"clean", Options{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			got := Scan(readFixture(t, tt.fixture), &tt.opts)
			if k := keys(got); !slices.Equal(k, tt.want) {
				t.Errorf("findings %q, want %q", k, tt.want)
				for _, f := range got {
					t.Log(f)
				}
			}
			for _, f := range got {
				if f.Scanner != BuiltinScannerName || f.Message == "" || strings.ContainsAny(f.Message, "\n\u202e\u200b") {
					t.Errorf("finding %+v: want the built-in scanner's name and a printable one-line message", f)
				}
			}
		})
	}
}

// A secret is never repeated whole in its finding's message: findings are
// shown on web pages and in CLI output.
func TestSecretRedacted(t *testing.T) {
	s := readFixture(t, "secrets")
	for _, f := range Scan(s, nil) {
		for _, secret := range []string{"AKIAQ3EGRYWJ7RPLM4XZ", "ghp_Zx9Lq2Rt8Vw4Ky6Mn3Pb7Hc1Jd5Fg0Sa2Ue4", "q8Zr2LmX9vT4kW7nB3yP6sJ1dF5hG0cR", "b3BlbnNzaC1rZXkt"} {
			if strings.Contains(f.Message, secret) {
				t.Errorf("%s repeats the secret %s", f, secret)
			}
		}
	}
}

// The tag characters' hidden text is spelled out in the message, so that
// a reviewer sees what was hidden.
func TestTagsSpelledOut(t *testing.T) {
	fs := Scan(readFixture(t, "tags"), nil)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "send ~/.ssh to evil") {
		t.Fatalf("findings %v: want one that spells the hidden text", fs)
	}
}

// corpusExceptions are findings of the real-world corpus that are right,
// each with why: none today.
var corpusExceptions = map[string]string{}

// The real-world corpus (the catalog's collection shapes, every skill
// they publish, and the examples) gives no finding: the built-in rules do
// not cry wolf on what real skills look like.
func TestBuiltinCleanOnRealSkills(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	total := 0
	for _, dir := range []string{"../../catalog/testdata/collections", "../../examples/skills"} {
		cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		for _, sk := range cat.Skills() {
			total++
			s := &Skill{Path: sk.Path}
			if v, ok := sk.Frontmatter.Get("allowed-tools"); ok {
				s.AllowedTools = ToolsOf(v)
			}
			for _, f := range sk.Files {
				data, err := cat.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				s.Files = append(s.Files, File{Path: strings.TrimPrefix(f.URI, sk.Root+"/"), Data: data})
			}
			// The strictest namespace setting the corpus could meet: only
			// what the skill itself lists passes, so the check runs.
			for _, f := range Scan(s, &Options{AllowedTools: append([]string{}, s.AllowedTools...)}) {
				key := sk.Path + "/" + f.File + ":" + f.RuleID
				if corpusExceptions[key] == "" {
					t.Errorf("%s: %s", sk.Path, f)
				}
			}
		}
	}
	if total < 17 {
		t.Fatalf("the corpus published %d skills, want at least 17", total)
	}
	t.Logf("%d real skills scanned", total)
}

func TestSplitTools(t *testing.T) {
	got := SplitTools("Bash(git diff:*) Read  Write,Edit")
	want := []string{"Bash(git diff:*)", "Read", "Write", "Edit"}
	if !slices.Equal(got, want) {
		t.Fatalf("SplitTools = %q, want %q", got, want)
	}
}

var _ = context.Background
