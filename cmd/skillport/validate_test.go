package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/skillport/skillport/catalog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func exitCode(err error) int {
	var ee *exitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		return ee.code
	}
	return -1
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("team/pdf/SKILL.md", "---\nname: pdf\ndescription: "+strings.Repeat("x", 1068)+"\n---\n")
	write("team/template/SKILL.md", "---\nname: template-skill\ndescription: d\n---\n")
	write("team/ok/SKILL.md", "---\nname: ok\ndescription: d\nhooks: x\n---\n")
	team := filepath.Join(dir, "team")

	var out, errOut bytes.Buffer
	err := runValidate(&out, &errOut, []string{team, "../../examples/skills"}, false, &catalog.Options{Strict: true})
	if exitCode(err) != 1 {
		t.Fatalf("exit %d (%v), want 1", exitCode(err), err)
	}
	want := team + "/ok/SKILL.md:4:8: warning: hooks: not a field of the Agent Skills specification; it is passed through as written (unknown-field)\n" +
		team + "/pdf/SKILL.md:3:14: description: 1068 characters, the limit is 1024 (description-length)\n" +
		team + "/template/SKILL.md:2:7: name \"template-skill\" must equal its directory name \"template\"; rename the folder or the name (name-directory)\n" +
		"6 skills valid, 2 invalid\n"
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out.String(), want)
	}

	// Without --strict a renamed folder is published under the name.
	out.Reset()
	if err := runValidate(&out, &errOut, []string{team}, false, &catalog.Options{}); exitCode(err) != 1 {
		t.Fatalf("exit %d (%v), want 1", exitCode(err), err)
	}
	if !strings.Contains(out.String(), team+"/template/SKILL.md:2:7: warning: name \"template-skill\" differs from its folder name \"template\"") ||
		!strings.HasSuffix(out.String(), "\n2 skills valid, 1 invalid\n") {
		t.Errorf("lenient output\n%s", out.String())
	}

	out.Reset()
	err = runValidate(&out, &errOut, []string{team}, true, &catalog.Options{})
	if exitCode(err) != 1 {
		t.Fatalf("--json exit %d", exitCode(err))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("--json printed %d lines: %s", len(lines), out.String())
	}
	var f map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &f); err != nil {
		t.Fatal(err)
	}
	if f["path"] != team+"/pdf/SKILL.md" || f["line"] != 3.0 || f["column"] != 14.0 || f["rule"] != "description-length" || f["severity"] != "error" || f["message"] == "" {
		t.Errorf("JSON finding %v", f)
	}

	out.Reset()
	if err := runValidate(&out, &errOut, []string{"../../examples/skills"}, false, &catalog.Options{}); err != nil {
		t.Errorf("examples are valid, got %v: %s", err, out.String())
	}
	if err := runValidate(&out, &errOut, []string{"../../examples/skills/git-workflow/SKILL.md"}, false, &catalog.Options{}); err != nil {
		t.Errorf("a SKILL.md argument: %v", err)
	}
	for _, bad := range [][]string{{filepath.Join(dir, "missing")}, {"validate_test.go"}} {
		if code := exitCode(runValidate(&out, &errOut, bad, false, &catalog.Options{})); code != 2 {
			t.Errorf("validate %v: exit %d, want 2", bad, code)
		}
	}
}

// The summary counts every SKILL.md found, and a hard-linked file is an
// error unless --allow-hardlinks.
func TestValidateCountsAndHardlinks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(dir, os.DirFS("../../catalog/testdata/collections/entry")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "linked"), 0o755)
	os.WriteFile(filepath.Join(dir, "linked", "SKILL.md"), []byte("---\nname: linked\ndescription: d\n---\n"), 0o644)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("secret"), 0o644)
	if err := os.Link(outside, filepath.Join(dir, "linked", "data.txt")); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := runValidate(&out, &errOut, []string{dir}, false, &catalog.Options{}); exitCode(err) != 1 {
		t.Fatalf("exit %d, want 1\n%s", exitCode(err), out.String())
	}
	if !strings.Contains(out.String(), filepath.Join(dir, "linked", "data.txt")+": file has 2 hard links") ||
		!strings.HasSuffix(out.String(), "\n0 skills valid, 2 invalid, 1 skipped\n") {
		t.Errorf("output\n%s", out.String())
	}
	out.Reset()
	runValidate(&out, &errOut, []string{dir}, false, &catalog.Options{AllowHardlinks: true})
	if !strings.HasSuffix(out.String(), "\n1 skill valid, 1 invalid, 1 skipped\n") {
		t.Errorf("--allow-hardlinks output\n%s", out.String())
	}
}

// validate buffers what it prints to stdout, yet a line it prints to
// stderr still comes after the findings printed before it: on one
// terminal, or with 2>&1, the report reads in order.
func TestValidateOutputOrder(t *testing.T) {
	dir := t.TempDir()
	skills, empty := filepath.Join(dir, "skills"), filepath.Join(dir, "empty")
	for _, d := range []string{filepath.Join(skills, "a"), empty} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(skills, "a", "SKILL.md"), []byte("---\nname: a\ndescription: d\nhooks: x\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var both bytes.Buffer
	if err := runValidate(&both, &both, []string{skills, empty}, false, &catalog.Options{}); exitCode(err) != 1 {
		t.Fatalf("validate with an empty folder: %v, want exit 1", err)
	}
	want := skills + "/a/SKILL.md:4:8: warning: hooks: not a field of the Agent Skills specification; it is passed through as written (unknown-field)\n" +
		"skillport: validate: no SKILL.md found under " + empty + " (a skill is a folder holding SKILL.md)\n" +
		"1 skill valid, 0 invalid\n"
	if both.String() != want {
		t.Errorf("output\n%s\nwant\n%s", both.String(), want)
	}
	// --errors-only: the warning is left out, the summary stays.
	both.Reset()
	if err := runValidateOpts(&both, &both, []string{skills}, false, true, &catalog.Options{}); err != nil || both.String() != "1 skill valid, 0 invalid\n" {
		t.Errorf("--errors-only: %v\n%s", err, both.String())
	}
}

// TestValidateShowsProgressOnATerminalOnly: a line naming the folder being
// checked, erased before the report; nothing of it when piped.
func TestValidateShowsProgressOnATerminalOnly(t *testing.T) {
	dir := "../../examples/skills"
	var out, errOut bytes.Buffer
	if err := runValidate(&out, &errOut, []string{dir}, false, &catalog.Options{}); err != nil || errOut.Len() != 0 {
		t.Fatalf("piped: %v, stderr %q", err, errOut.String())
	}
	onTerminal(t, 80)
	errOut.Reset()
	if err := runValidate(&out, &errOut, []string{dir}, false, &catalog.Options{}); err != nil || errOut.String() != "\r\x1b[Kchecking "+dir+"…\r\x1b[K" {
		t.Errorf("on a terminal: %v, stderr %q", err, errOut.String())
	}
}
