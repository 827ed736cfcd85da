package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	t.Setenv("SKILLPORT_TEST_DIR", "/skills")
	t.Setenv("SKILLPORT_TEST_TOKEN", "tok")
	origins, notes, err := LoadConfig("testdata/mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range origins {
		got = append(got, o.Label+"="+o.Where())
	}
	want := "my-remote-server=https://example.com/mcp docs=stdio: node vscode=http://127.0.0.1:8080/mcp team=team-skills"
	if strings.Join(got, " ") != want {
		t.Errorf("origins %v\nwant %s", got, want)
	}
	if origins[1].Args[1] != "/skills" || origins[1].Env["TOKEN"] != "tok" || origins[0].Headers["Authorization"] != "Bearer tok" {
		t.Errorf("expansion: %+v %+v", origins[1], origins[0])
	}
	if origins[3].Dir != filepath.Join("testdata", "team-skills") {
		t.Errorf("skill dir %q not relative to the config file", origins[3].Dir)
	}
	if j := strings.Join(notes, "\n"); !strings.Contains(j, `"off" is disabled`) || !strings.Contains(j, `labelled "my-remote-server"`) {
		t.Errorf("notes %v", notes)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"mcpServers":{"a":{}}}`:                                  "neither command nor url",
		`{"mcpServers":{"a":{"command":"x","url":"y"}}}`:           "both command and url",
		`{"mcpServers":{"a":{"command":"x","label":"Bad Label"}}}`: "origin label",
		`{"skillDirs":[{"label":"x"}]}`:                            "no path",
		`[1,2]`:                                                    "not a JSON configuration",
		`{"mcpServers":{"a":{"command":"x"}},"skillDirs":[{"label":"a","path":"p"}]}`:                            "used twice",
		`{"servers":{"a":{"url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer ${input:token}"}}}}`: `server "a": headers.Authorization: ${input:token} is a value VS Code prompts for, and skillport cannot`,
	} {
		if _, _, err := ParseConfig([]byte(in), ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(%s) = %v, want %q", in, err, want)
		}
	}
	if l := DeriveLabel("Ünïcode  Server!!"); l != "n-code-server" {
		t.Errorf("DeriveLabel = %q", l)
	}
}

func TestFetchAllAndMaterialize(t *testing.T) {
	f := newFake("docs")
	f.addSkill("acme/pdf", "PDF", map[string]string{"references/FORMS.md": "forms", "scripts/run.sh": "#!/bin/sh\necho hi\n"})
	h := connect(t, nil, Origin{Label: "docs", Transport: f.transport(t)})
	e, _ := h.Lookup("pdf")
	files, err := h.FetchAll(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if files[0].URI != e.URI {
		t.Errorf("SKILL.md not fetched first: %s", files[0].URI)
	}
	dir := t.TempDir()
	out, err := Materialize(dir, e, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	// MCP carries no mode: a file starting with "#!" is made executable
	// (internal/filemode), any other file is not.
	st, err := os.Stat(filepath.Join(out, "scripts", "run.sh"))
	if err != nil || st.Mode().Perm()&0o100 == 0 || !st.Mode().IsRegular() {
		t.Fatalf("script written as %v, %v; want executable", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Join(out, "references", "FORMS.md")); err != nil || st.Mode().Perm()&0o111 != 0 {
		t.Fatalf("FORMS.md written as %v, %v; never executable", st.Mode(), err)
	}
	if got, err := Materialize(dir, e, files, nil); !errors.Is(err, ErrUpToDate) || got != out {
		t.Errorf("second pull of identical content = %q, %v; want ErrUpToDate", got, err)
	}
	// A local edit: the folder differs, and only Replace overwrites it.
	if err := os.WriteFile(filepath.Join(out, "references", "FORMS.md"), []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Materialize(dir, e, files, nil); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "differs") {
		t.Errorf("pull over a changed folder = %v; want ErrExists", err)
	}
	if _, err := Materialize(dir, e, files, &MaterializeOptions{Replace: true}); err != nil {
		t.Errorf("replace: %v", err)
	}
	if _, err := Materialize(dir, e, files, nil); !errors.Is(err, ErrUpToDate) {
		t.Errorf("after replace: %v", err)
	}
	// A script without its executable bit (pulled before the rule, or
	// chmod'ed) differs too: an up-to-date folder follows the rule.
	script := filepath.Join(out, "scripts", "run.sh")
	if err := os.Chmod(script, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Materialize(dir, e, files, nil); !errors.Is(err, ErrExists) {
		t.Errorf("pull over a script that lost its executable bit = %v; want ErrExists", err)
	}
	if _, err := Materialize(dir, e, files, &MaterializeOptions{Replace: true}); err != nil {
		t.Errorf("replace: %v", err)
	}
	if st, err := os.Stat(script); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("script after replace: %v, %v; want executable", st.Mode(), err)
	}
	// An extra file or a link in the folder is a difference too.
	os.WriteFile(filepath.Join(out, "extra.md"), nil, 0o644)
	if _, err := Materialize(dir, e, files, nil); !errors.Is(err, ErrExists) {
		t.Errorf("extra file: %v", err)
	}
	os.Remove(filepath.Join(out, "extra.md"))
	os.Remove(filepath.Join(out, "references", "FORMS.md"))
	os.Symlink(filepath.Join(out, "SKILL.md"), filepath.Join(out, "references", "FORMS.md"))
	if _, err := Materialize(dir, e, files, nil); !errors.Is(err, ErrExists) {
		t.Errorf("a link in place of a file: %v", err)
	}
	// The skill folder itself a link to an identical folder is not the
	// folder: not up to date, and Replace puts a real folder in its place,
	// leaving the folder it pointed at alone.
	if _, err := Materialize(dir, e, files, &MaterializeOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
	twin := filepath.Join(t.TempDir(), "pdf")
	if err := os.Rename(out, twin); err != nil {
		t.Fatal(err)
	}
	os.Symlink(twin, out)
	if _, err := Materialize(dir, e, files, nil); !errors.Is(err, ErrExists) {
		t.Errorf("a link in place of the folder: %v", err)
	}
	if _, err := Materialize(dir, e, files, &MaterializeOptions{Replace: true}); err != nil {
		t.Errorf("replace a linked folder: %v", err)
	}
	if fi, err := os.Lstat(out); err != nil || !fi.IsDir() {
		t.Errorf("after replace the folder is %v, %v; want a real folder", fi, err)
	}
	if _, err := os.Stat(filepath.Join(twin, "SKILL.md")); err != nil {
		t.Errorf("the folder the link pointed at was touched: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "pdf" {
		t.Errorf("target dir holds %v; staging left behind?", entries)
	}
}

func TestMaterializeRefusesCaseCollisions(t *testing.T) {
	e, files := fetchedSkill(t, "x", map[string]string{"Skill.md": "twin", "a": "file", "A/b": "dir"})
	dir := t.TempDir()
	if _, err := Materialize(dir, e, files, nil); err == nil || !strings.Contains(err.Error(), "case-insensitive") {
		t.Fatalf("Materialize = %v; want a case-collision refusal (H-41)", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("partial pull left %v", entries)
	}
}

func TestParseConfigJSONC(t *testing.T) {
	// VS Code writes comments and trailing commas; Claude Desktop keeps its
	// own settings beside mcpServers.
	src := `// ~/.config/Code/User/mcp.json
{
  "globalShortcut": "",
  "preferences": {"theme": "dark"},
  "inputs": [],
  "mcpServers": {
    /* the team's skills */
    "docs": {"command": "skillport", "args": ["serve", "./skills",], "autoApprove": [],},
  },
}
`
	origins, _, err := ParseConfig([]byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(origins) != 1 || origins[0].Command != "skillport" || len(origins[0].Args) != 2 {
		t.Errorf("%+v", origins)
	}
}

func TestParseConfigRefusesTyposAndUnsetVariables(t *testing.T) {
	os.Unsetenv("SKILLPORT_SURELY_UNSET")
	for _, tc := range []struct{ in, want string }{
		{"{\n  \"mcpServer\": {\"a\": {\"command\": \"x\"}}\n}", `f.json:2:3: unknown key "mcpServer"; did you mean "mcpServers"?`},
		{"{\"mcpServers\": {\"a\": {\"comand\": \"x\"}}}", `mcpServers["a"]: unknown key "comand"; did you mean "command"?`},
		{"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"arg\": []}}}", `unknown key "arg"; did you mean "args"?`},
		{"{\"skillDirs\": [{\"label\": \"a\", \"path\": \"p\", \"paht\": 1}]}", `skillDirs[0]: unknown key "paht"`},
		{"{\"preferences\": {}}", `no "mcpServers", "servers" or "skillDirs" (the keys are "preferences")`},
		{"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"T\": \"${SKILLPORT_SURELY_UNSET}\"}}}}", `server "a": env.T: ${SKILLPORT_SURELY_UNSET} is not set`},
		{"{\"mcpServers\": {\"a\": {\"url\": \"https://h/mcp\", \"headers\": {\"Authorization\": \"Bearer ${env:SKILLPORT_SURELY_UNSET}\"}}}}", `headers.Authorization: ${SKILLPORT_SURELY_UNSET} is not set`},
		{"{\"skillDirs\": [{\"label\": \"a\", \"path\": \"${SKILLPORT_SURELY_UNSET}/x\"}]}", `skillDirs[0].path: ${SKILLPORT_SURELY_UNSET} is not set`},
		{"{\"mcpServers\": {\"a\": {\"command\": 7}}}", `f.json:1:34: mcpServers.command: expected a string`},
		{"{\"mcpServers\": {\"a\": {\"command\": \"x\"}} // ok\n,,}", `f.json:2:`},
	} {
		_, _, err := parseConfig("f.json", []byte(tc.in), "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n  error %v\n  want  %q", tc.in, err, tc.want)
		}
	}
	t.Setenv("SKILLPORT_SET_EMPTY", "")
	if _, _, err := ParseConfig([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["${SKILLPORT_SET_EMPTY}"]}}}`), ""); err != nil {
		t.Errorf("a variable set to the empty string: %v", err)
	}
}

// FuzzParseConfig: any bytes give origins or an error, never a panic, and
// an error about a position names one inside the input.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("// c\n{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"${HOME}\"],},},}"))
	f.Add([]byte(`{"mcpServer": {}, "skillDirs": [{"label": "a", "path": "p", "x": 1}]}`))
	f.Add([]byte(`{"servers": {"b": {"url": "http://h/mcp", "headers": {"A": "${env:NOPE_NOT_SET}"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		origins, _, err := parseConfig("f.json", data, "")
		if err == nil {
			for _, o := range origins {
				if ValidLabel(o.Label) != nil {
					t.Fatalf("invalid label %q accepted", o.Label)
				}
			}
		}
	})
}
