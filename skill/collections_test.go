package skill

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shapes of real collections that hosts load every day: warnings by
// default, errors with Strict.
func TestValidateLenient(t *testing.T) {
	tests := []struct {
		name string
		file string // in testdata/collections
		dir  string
		rule string
		line int
		col  int
	}{
		{"nested metadata (OpenClaw)", "metadata-nested.md", "metadata-nested", RuleMetadataType, 5, 3},
		{"metadata number", "metadata-number.md", "metadata-number", RuleMetadataType, 6, 3},
		{"metadata list value", "metadata-list.md", "metadata-list", RuleMetadataType, 5, 3},
		{"empty metadata", "metadata-empty.md", "metadata-empty", RuleMetadataType, 4, 10},
		{"allowed-tools flow list", "tools-flow.md", "tools-flow", RuleAllowedToolsType, 4, 16},
		{"allowed-tools block list", "tools-block.md", "tools-block", RuleAllowedToolsType, 5, 3},
		{"name differs from folder", "renamed.md", "docker-compose-gen", RuleNameDirectory, 2, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "collections", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := Parse(data)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			for _, strict := range []bool{false, true} {
				fs := ValidateWith(doc, &ValidateOptions{Dir: tt.dir, Strict: strict})
				if len(fs) != 1 {
					t.Fatalf("strict=%v: findings %v, want one %s", strict, fs, tt.rule)
				}
				f := fs[0]
				want := Warning
				if strict {
					want = Error
				}
				if f.Rule != tt.rule || f.Severity != want || f.Line != tt.line || f.Column != tt.col {
					t.Errorf("strict=%v: got %v %v, want %s %v at %d:%d", strict, f, f.Severity, tt.rule, want, tt.line, tt.col)
				}
				if !strict && !strings.Contains(f.Message, "served as written") && !strings.Contains(f.Message, "rename the folder for hosts that load from disk") {
					t.Errorf("warning does not say how the skill is published: %q", f.Message)
				}
			}
		})
	}
	// Still errors without Strict: a list of non-strings is not a tool list.
	doc, _ := Parse([]byte("---\nname: a\ndescription: d\nallowed-tools: [1, {a: b}]\n---\n"))
	if fs := ValidateWith(doc, &ValidateOptions{Dir: "a"}); !HasErrors(fs) {
		t.Errorf("allowed-tools [1, {a: b}]: %v, want an error", fs)
	}
}

// The frontmatter of a lenient warning is served as written.
func TestMetadataServedAsWritten(t *testing.T) {
	data, _ := os.ReadFile(filepath.Join("testdata", "collections", "metadata-nested.md"))
	doc, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"metadata-nested","description":"OpenClaw style metadata.","metadata":{"openclaw":{"emoji":"🔷","requires":{"bins":["jq"]}}}}`
	if got := string(doc.Frontmatter.JSON()); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestParseSurrogatePairs(t *testing.T) {
	tests := []struct {
		yaml, want string
	}{
		{`description: "\ud83c\udfe6 Bank"`, "🏦 Bank"},
		{`description: "\uD83C\uDFE6\uD83D\uDE00"`, "🏦😀"},
		{`description: "a \u00e9 \ud83c\udfe6 b"`, "a é 🏦 b"},
		{`description: "x\\ud83c\udfe6"`, ""}, // an escaped backslash: the pair is broken, still refused
	}
	for _, tt := range tests {
		doc, err := Parse([]byte("---\nname: a\n" + tt.yaml + "\n---\n"))
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s: parsed as %q, want an error", tt.yaml, doc.Frontmatter.Description())
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.yaml, err)
			continue
		}
		if got := doc.Frontmatter.Description(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.yaml, got, tt.want)
		}
	}
	// A lone surrogate is still refused, and a plain scalar keeps its text.
	if _, err := Parse([]byte("---\nname: a\ndescription: \"\\ud83c\"\n---\n")); err == nil {
		t.Error("lone high surrogate accepted")
	}
	doc, err := Parse([]byte("---\nname: a\ndescription: plain \\ud83c\\udfe6\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Frontmatter.Description(); got != `plain \ud83c\udfe6` {
		t.Errorf("plain scalar rewritten: %q", got)
	}
	// Beside a quoted pair, a plain one would be rewritten too: refused
	// rather than served with a changed value.
	if doc, err := Parse([]byte("---\nname: a\ndescription: plain \\ud83c\\udfe6\nx: \"\\ud83c\\udfe6\"\n---\n")); err == nil {
		t.Errorf("plain and quoted pairs: parsed as %q, want an error", doc.Frontmatter.Description())
	}
}

// YAML errors are reported at the file line and column of the problem,
// never at line 0, with one "invalid YAML" and advice on what to change.
func TestParseSyntaxPositions(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string // lines after "---"
		line, col int
		advice    string
	}{
		{"unclosed list on line 3", "name: a\ndescription: [unclosed\n", 3, 14, "quote the value"},
		{"unquoted colon", "name: a\ndescription: Use when: you need x\n", 3, 22, `quote`},
		{"block scalar on one line", "name: a\ndescription: | text here\n", 3, 14, "following lines"},
		{"backtick", "name: a\ndescription: `x`\n", 3, 14, `quote the value: description: "` + "`x`" + `"`},
		{"tab indentation", "name: a\n\tdescription: x\n", 3, 1, "spaces"},
		{"unclosed quote", "name: a\ndescription: \"abc\n", 3, 14, "close the quoted value"},
		{"first line", "name: [a\n", 2, 7, ""},
		{"first line, mapping value", "name: a: b\ndescription: x\n", 2, 8, `quote`},
		{"bad indentation", "name: a\n  description: x\n", 3, 3, "indentation"},
		{"bad escape", "name: a\ndescription: \"a\\qb\"\n", 3, 16, "backslash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("---\n" + tt.yaml + "---\n"))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a ParseError", err)
			}
			if pe.Line != tt.line || pe.Column != tt.col {
				t.Errorf("at %d:%d, want %d:%d (%s)", pe.Line, pe.Column, tt.line, tt.col, pe.Msg)
			}
			if strings.Count(pe.Msg, "invalid YAML") != 1 || strings.Contains(pe.Msg, "yaml:") {
				t.Errorf("message %q: want one \"invalid YAML\" and no \"yaml:\"", pe.Msg)
			}
			if !strings.Contains(pe.Msg, tt.advice) {
				t.Errorf("message %q does not say %q", pe.Msg, tt.advice)
			}
			if s := fmt.Sprint(pe.Finding()); strings.HasPrefix(s, "0:") {
				t.Errorf("finding at line 0: %s", s)
			}
		})
	}
}
