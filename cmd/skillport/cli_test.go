package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/internal/jsonc"
)

// runCLI runs the command line in-process and returns stdout, stderr and
// the exit status.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&errOut)
	defer rootCmd.SetOut(nil)
	defer rootCmd.SetErr(nil)
	resetFlags(rootCmd)
	stderr := os.Stderr
	r, w, _ := os.Pipe()
	os.Stderr = w
	code := run(args)
	w.Close()
	os.Stderr = stderr
	printed, _ := io.ReadAll(r)
	return out.String(), errOut.String() + string(printed), code
}

// resetFlags gives c's flags and its subcommands' their defaults again:
// flags keep their values between in-process runs.
func resetFlags(c *cobra.Command) {
	// Init forgets where an earlier run's "--" was (ArgsLenAtDash), which
	// parsing alone never resets; it keeps the flags themselves.
	fs := c.Flags()
	fs.Init(fs.Name(), pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			sv.Replace(nil)
		} else {
			f.Value.Set(f.DefValue)
		}
		f.Changed = false
	})
	for _, sub := range c.Commands() {
		resetFlags(sub)
	}
}

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "devel+0123456789ab-dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		// Go 1.24+ stamps a checkout build with a pseudo-version.
		{debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261127230909-064bc5f1a2b3+dirty"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "064bc5f1a2b3c4d5e6f7"}, {Key: "vcs.modified", Value: "true"}}}, "devel+064bc5f1a2b3-dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "v1.4.1-0.20261127230909-064bc5f1a2b3"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "064bc5f1a2b3c4d5e6f7"}}}, "devel+064bc5f1a2b3"},
	} {
		if got := versionOf(&tc.bi); got != tc.want {
			t.Errorf("versionOf = %q, want %q", got, tc.want)
		}
	}
	out, _, code := runCLI(t, "--version")
	if code != 0 || out != "skillport "+version()+"\n" || strings.Contains(out, "dev\n") && version() != "dev" {
		t.Errorf("--version: %d %q", code, out)
	}
	out, _, code = runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "skillport "+version()+" (go") {
		t.Errorf("version: %d %q", code, out)
	}
	if version() == "dev" {
		t.Error(`version() is the placeholder "dev"`)
	}
}

// toolServer is an MCP server with a tool and no skills, like most servers
// in a desktop client's configuration.
func toolServer(t *testing.T, label string) host.Origin {
	s := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx, st)
	return host.Origin{Label: label, Transport: ct}
}

func TestLsToolServerIsNoSkillsAndExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runLs(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t), toolServer(t, "github")}, false)
	if err != nil || !strings.Contains(errOut.String(), "skillport: github: no skills (the server does not declare the Skills extension)") {
		t.Errorf("exit %d; stderr:\n%s", exitCode(err), errOut.String())
	}
	if strings.Contains(errOut.String(), "unavailable") || strings.Count(errOut.String(), "github") != 1 {
		t.Errorf("the tool server is reported as a failure, or more than once:\n%s", errOut.String())
	}
	out.Reset()
	runLs(context.Background(), &out, &errOut, flags(), []host.Origin{toolServer(t, "github")}, true)
	if !strings.Contains(out.String(), `"noSkills": true`) {
		t.Errorf("--json does not mark the server:\n%s", out.String())
	}
}

func TestLsDeadServerShowsStderrOnce(t *testing.T) {
	var out, errOut bytes.Buffer
	dead := host.Origin{Label: "server", Command: "sh", Args: []string{"-c", `echo "fatal: missing API key" >&2; exit 3`}}
	err := runLs(context.Background(), &out, &errOut, flags(), []host.Origin{dead}, false)
	s := errOut.String()
	if exitCode(err) != 1 || !strings.Contains(s, "sh exited with status 3") || !strings.Contains(s, "\n    fatal: missing API key\n") {
		t.Errorf("exit %d; stderr:\n%s", exitCode(err), s)
	}
	if strings.Count(s, "missing API key") != 1 || strings.Count(s, "initialize") != 1 {
		t.Errorf("the error is printed more than once:\n%s", s)
	}
}

func TestLsSlowServerSaysTimeout(t *testing.T) {
	f := flags()
	f.timeout = 300 * time.Millisecond
	var out, errOut bytes.Buffer
	start := time.Now()
	err := runLs(context.Background(), &out, &errOut, f, []host.Origin{{Label: "slow", Command: "sleep", Args: []string{"30"}}}, false)
	if exitCode(err) != 1 || !strings.Contains(errOut.String(), "pass --timeout 1.2s to wait longer") || time.Since(start) > 5*time.Second {
		t.Errorf("exit %d after %v; stderr:\n%s", exitCode(err), time.Since(start), errOut.String())
	}
	var lsCmd *cobra.Command
	for _, c := range rootCmd.Commands() {
		if c.Name() == "ls" {
			lsCmd = c
		}
	}
	if d := lsCmd.Flags().Lookup("timeout").DefValue; d != "3s" {
		t.Errorf("ls --timeout defaults to %s, want 3s", d)
	}
}

// lsOf lists skills with ls's output going to a terminal width columns
// wide (0: a pipe).
func lsOf(t *testing.T, width int, origins ...host.Origin) string {
	onTerminal(t, width)
	var out, errOut bytes.Buffer
	if err := runLs(context.Background(), &out, &errOut, flags(), origins, false); err != nil {
		t.Fatalf("ls: %v\n%s", err, errOut.String())
	}
	return out.String()
}

func TestLsOutput(t *testing.T) {
	local := host.Origin{Label: "dir", Dir: "../../examples/skills", Display: "../../examples/skills"}
	table := lsOf(t, 80, examplesOrigin(t), local)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if !strings.HasPrefix(lines[0], "ORIGIN") {
		t.Errorf("no header on a terminal:\n%s", table)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("%d columns on an 80-column terminal: %q", n, l)
		}
	}
	if strings.Contains(table, "examples/skills") {
		t.Errorf("descriptions carry the folder path:\n%s", table)
	}
	piped := lsOf(t, 0, examplesOrigin(t), local)
	if strings.HasPrefix(piped, "ORIGIN") || strings.Contains(piped, "…") || strings.Contains(piped, "examples/skills") {
		t.Errorf("piped output has a header, truncation or folder paths:\n%s", piped)
	}
	for _, l := range strings.Split(strings.TrimSpace(piped), "\n") {
		if f := strings.Split(l, "\t"); len(f) != 6 {
			t.Errorf("piped row has %d tab-separated fields: %q", len(f), l)
		}
	}
	if !strings.Contains(piped, "including eligibility checks and the confirmation email. Use for any refund") {
		t.Errorf("piped descriptions are cut:\n%s", piped)
	}
	var out, errOut bytes.Buffer
	runLs(context.Background(), &out, &errOut, flags(), []host.Origin{local}, true)
	if strings.Contains(out.String(), `"description": "(`) {
		t.Errorf("--json descriptions carry the folder path:\n%s", out.String())
	}
}

func TestHumanSizeAndCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 10 << 10: "10 KiB", 3 << 20: "3.0 MiB", 5 << 30: "5.0 GiB"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
	if count(1, "file", "files") != "1 file" || count(2, "file", "files") != "2 files" || count(0, "skill", "skills") != "0 skills" {
		t.Error("count")
	}
}

func TestVerifyJSONAndHumanOutput(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runVerify(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t)}, false); err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`\d+ bytes verified|\b1 files\b`).MatchString(out.String()) || !strings.Contains(out.String(), " KiB verified") {
		t.Errorf("verify output:\n%s", out.String())
	}
	out.Reset()
	if err := runVerify(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t)}, true); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Skills []verifyResult `json:"skills"`
	}
	if err := json.Unmarshal(out.Bytes(), &js); err != nil || len(js.Skills) == 0 || js.Skills[0].Status != "ok" || js.Skills[0].Size == 0 {
		t.Errorf("verify --json: %v\n%s", err, out.String())
	}
}

func TestPullIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	pull := func(replace, asJSON bool) (string, string, int) {
		var out, errOut bytes.Buffer
		err := runPull(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t)}, dir, replace, asJSON)
		return out.String(), errOut.String(), exitCode(err)
	}
	if out, errOut, code := pull(false, false); code != 0 {
		t.Fatalf("first pull: %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := pull(false, false)
	if code != 0 || !strings.Contains(out, "pdf-processing is up to date") || !strings.Contains(out, "0 skills pulled") || !strings.Contains(out, "up to date, 0 failed") {
		t.Errorf("second pull of identical content: exit %d\n%s%s", code, out, errOut)
	}
	os.WriteFile(filepath.Join(dir, "pdf-processing", "SKILL.md"), []byte("edited"), 0o644)
	out, errOut, code = pull(false, false)
	if code != 1 || !strings.Contains(errOut, "pdf-processing exists and differs from the server's version; pass --replace to overwrite it") || strings.Count(errOut, "pdf-processing") != 2 {
		t.Errorf("pull over a changed folder: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = pull(true, true)
	var js struct {
		Skills []pullResult `json:"skills"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != 0 {
		t.Fatalf("pull --json: %d %v\n%s", code, err, out)
	}
	statuses := map[string]string{}
	for _, r := range js.Skills {
		statuses[r.Skill] = r.Status
	}
	if statuses["docs:pdf-processing"] != "pulled" || statuses["docs:refunds"] != "up-to-date" {
		t.Errorf("pull --json --replace: %v", statuses)
	}
}

func TestPullRefusesBadTargetBeforeConnecting(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	// A server that would fail loudly if it were ever started.
	never := host.Origin{Label: "never", Command: "sh", Args: []string{"-c", "echo CONNECTED >&2; exit 1"}}
	for _, to := range []string{file, filepath.Join(file, "sub"), "/proc/self"} {
		var out, errOut bytes.Buffer
		err := runPull(context.Background(), &out, &errOut, flags(), []host.Origin{never}, to, false, false)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "--to "+to) || strings.Contains(errOut.String(), "CONNECTED") || strings.Contains(err.Error(), "\n") {
			t.Errorf("--to %s: exit %d, %v\n%s", to, exitCode(err), err, errOut.String())
		}
	}
}

func TestPullFailsWhenNothingCanBePulled(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runPull(context.Background(), &out, &errOut, flags(), []host.Origin{toolServer(t, "tools")}, t.TempDir(), false, false)
	if exitCode(err) != 1 || !strings.Contains(errOut.String(), "no skill could be pulled") {
		t.Errorf("exit %d\n%s%s", exitCode(err), out.String(), errOut.String())
	}
}

func TestPullWritesNestedSkillsOnce(t *testing.T) {
	src := t.TempDir()
	for p, c := range map[string]string{
		"outer/SKILL.md":           "---\nname: outer\ndescription: d\n---\n",
		"outer/inner/SKILL.md":     "---\nname: inner\ndescription: d\n---\n",
		"outer/inner/reference.md": "x",
	} {
		os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(src, p), []byte(c), 0o644)
	}
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	err := runPull(context.Background(), &out, &errOut, flags(), []host.Origin{dirOrigin(t, src, "docs")}, dir, false, false)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "outer", "inner", "reference.md")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "inner")); err == nil {
		t.Errorf("the nested skill was written a second time:\n%s", out.String())
	}
}

func TestPullRefusesNonPortableNamesOnce(t *testing.T) {
	src := t.TempDir()
	for p, c := range map[string]string{
		"s/SKILL.md":   "---\nname: s\ndescription: d\n---\n",
		"s/nul.txt":    "x",
		"ok/SKILL.md":  "---\nname: ok\ndescription: d\n---\n",
		"ok/notes.txt": "x",
	} {
		os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(src, p), []byte(c), 0o644)
	}
	var out, errOut bytes.Buffer
	err := runPull(context.Background(), &out, &errOut, flags(), []host.Origin{dirOrigin(t, src, "docs")}, t.TempDir(), false, false)
	if exitCode(err) != 1 || !strings.Contains(errOut.String(), `docs:s: not pulled: `) || !strings.Contains(errOut.String(), "nul.txt") ||
		!strings.Contains(errOut.String(), "Windows device name NUL") || strings.Count(errOut.String(), "\n") != 1 {
		t.Errorf("exit %d\n%s%s", exitCode(err), out.String(), errOut.String())
	}
}

func TestCommandLineConflictsAndMissingPaths(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(cfg, []byte(`{"mcpServers": {}}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pull", "--to", t.TempDir(), "--config", cfg, "http://127.0.0.1:1/mcp"}, "not both"},
		{[]string{"ls", "--skills-dir", "/missing"}, "--skills-dir /missing: no such directory"},
		{[]string{"load", "--header", "A: b", "--config", cfg, "x:y"}, "--header and --label apply to the server named on the command line"},
		{[]string{"load", "--label", "x", "--config", cfg, "x:y"}, "--header and --label apply to the server named on the command line"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestLsConfigErrorsArePositioned(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "mcp.json")
	os.WriteFile(typo, []byte("{\n  // my servers\n  \"mcpServer\": {\"a\": {\"command\": \"x\"}},\n}\n"), 0o644)
	_, errOut, code := runCLI(t, "ls", "--config", typo)
	if code != 2 || !strings.Contains(errOut, typo+`:3:3: unknown key "mcpServer"; did you mean "mcpServers"?`) || strings.Count(errOut, "mcpServer\"") != 1 {
		t.Errorf("exit %d: %s", code, errOut)
	}
	unset := filepath.Join(dir, "unset.json")
	os.Unsetenv("SKILLPORT_TEST_TEAM_TOKEN")
	os.WriteFile(unset, []byte(`{"mcpServers": {"team": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${SKILLPORT_TEST_TEAM_TOKEN}"}}}}`), 0o644)
	_, errOut, code = runCLI(t, "ls", "--config", unset)
	if code != 2 || !strings.Contains(errOut, "${SKILLPORT_TEST_TEAM_TOKEN} is not set") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

func TestLsHonoursGatewayFilters(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	abs, _ := filepath.Abs("../../examples/skills")
	cfg := filepath.Join(t.TempDir(), "gateway.json")
	os.WriteFile(cfg, []byte(`// gateway.json
{"skillDirs": [{"label": "local", "path": "`+abs+`", "include": ["pdf-*"],}],
 "tokenBudget": 2000}`), 0o644)
	onTerminal(t, 0)
	out, errOut, code := runCLI(t, "ls", "--config", cfg, "--no-local")
	if code != 0 || !strings.Contains(out, "pdf-processing") || strings.Contains(out, "refunds") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestLoadAmbiguousName(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var out, errOut bytes.Buffer
	origins := []host.Origin{examplesOrigin(t), dirOrigin(t, "../../examples/skills", "mirror")}
	err := runLoad(context.Background(), &out, &errOut, flags(), origins, "pdf-processing", "", true)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "pdf-processing names 2 skills: docs:pdf-processing, mirror:pdf-processing") || out.Len() != 0 {
		t.Errorf("exit %d: %v\n%s", exitCode(err), err, out.String())
	}
}

// A file named with terminal control sequences prints as visible escapes,
// never raw, in every command's output.
func TestNamesAreEscaped(t *testing.T) {
	const evil = "ctl\x1b]0;PWNED\a\x1b[2J"
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, evil), 0o755)
	os.WriteFile(filepath.Join(src, evil, "SKILL.md"), []byte("---\nname: ctl\ndescription: d\n---\n"), 0o644)
	os.MkdirAll(filepath.Join(src, "s"), 0o755)
	os.WriteFile(filepath.Join(src, "s", "SKILL.md"), []byte("---\nname: s\ndescription: d\n---\n"), 0o644)
	os.WriteFile(filepath.Join(src, "s", evil+".md"), []byte("x"), 0o644)
	var out, errOut bytes.Buffer
	runValidate(&out, &errOut, []string{src}, false, &catalog.Options{})
	all := out.String() + errOut.String()
	if strings.ContainsAny(all, "\x1b\a") || !strings.Contains(all, `ctl\x1b]0;PWNED\x07\x1b[2J`) {
		t.Errorf("validate printed %q", all)
	}
	out.Reset()
	errOut.Reset()
	runValidate(&out, &errOut, []string{src}, true, &catalog.Options{})
	if strings.ContainsAny(out.String()+errOut.String(), "\x1b\a") {
		t.Errorf("validate --json printed raw controls %q", out.String())
	}
	// From a server: a stdio server that dies printing control sequences.
	out.Reset()
	errOut.Reset()
	dead := host.Origin{Label: "server", Command: "sh", Args: []string{"-c", `printf 'bad\033]0;PWNED\007\033[2J\n' >&2; exit 1`}}
	runLs(context.Background(), &out, &errOut, flags(), []host.Origin{dead}, false)
	if strings.ContainsAny(errOut.String(), "\x1b\a") || !strings.Contains(errOut.String(), `bad\x1b]0;PWNED\x07\x1b[2J`) {
		t.Errorf("ls printed %q", errOut.String())
	}
}

// The json and jsonc blocks of the README and docs/ are read, verbatim, by
// the parser of the file each one shows.
func TestREADMESnippetsParse(t *testing.T) {
	t.Setenv("TEAM_TOKEN", "t")
	pages, _ := filepath.Glob("../../docs/*.md") // the README's topics moved there
	var data []byte
	for _, p := range append([]string{"../../README.md"}, pages...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
	}
	blocks := regexp.MustCompile("(?s)```(json|jsonc)\n(.*?)```").FindAllSubmatch(data, -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d json/jsonc blocks in README.md and docs/", len(blocks))
	}
	for _, b := range blocks {
		src := b[2]
		var err error
		switch {
		case bytes.Contains(src, []byte(`"approvals"`)) || bytes.Contains(src, []byte(`"include"`)):
			_, err = gateway.ParseConfig("README gateway.json", src)
		case bytes.Contains(src, []byte(`"mcpServers"`)) || bytes.Contains(src, []byte(`"servers"`)) || bytes.Contains(src, []byte(`"skillDirs"`)):
			_, _, err = host.ParseConfig(src, "")
		case bytes.Contains(src, []byte(`"rules"`)):
			_, err = access.Parse("README rules.jsonc", src)
		case bytes.Contains(src, []byte(`"allow"`)) || bytes.Contains(src, []byte(`"deny"`)):
			p := filepath.Join(t.TempDir(), "policy.json")
			os.WriteFile(p, src, 0o644)
			_, err = approval.LoadPolicy(p, nil)
		default:
			var v any
			err = jsonc.Unmarshal("README", src, &v, false)
		}
		if err != nil {
			t.Errorf("README block does not parse: %v\n%s", err, src)
		}
	}
}

func TestEmptyDirWarns(t *testing.T) {
	empty := t.TempDir()
	var out, errOut bytes.Buffer
	if err := runValidate(&out, &errOut, []string{empty}, false, &catalog.Options{}); exitCode(err) != 1 {
		t.Fatalf("validate of an empty folder: %v, want exit 1", err)
	}
	if !strings.Contains(errOut.String(), "skillport: validate: no SKILL.md found under "+empty+" (") {
		t.Errorf("validate of an empty folder: %q", errOut.String())
	}
	_, stderr, _ := runCLI(t, "serve", "--watch=false", empty)
	if !strings.Contains(stderr, "warning: "+empty+" holds no skill") || !strings.Contains(stderr, "serving 0 skills (0 files, 0 B)") {
		t.Errorf("serve of an empty folder: %q", stderr)
	}
}

// `echo '{}' | skillport serve DIR`: the line is answered with a JSON-RPC
// error and the server keeps serving the next request.
func TestServeStdioSurvivesMalformedLines(t *testing.T) {
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	oldIn, oldOut := os.Stdin, os.Stdout
	os.Stdin, os.Stdout = inR, outW
	done := make(chan int, 1)
	go func() { _, _, code := runCLI(t, "serve", "--watch=false", "../../examples/skills"); done <- code }()
	defer func() { os.Stdin, os.Stdout = oldIn, oldOut }()
	io.WriteString(inW, "{}\nnot json\n"+`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`+"\n")
	r := bufio.NewReader(outR)
	var codes []float64
	for range 3 {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			ID    any `json:"id"`
			Error *struct {
				Code float64 `json:"code"`
			} `json:"error"`
			Result json.RawMessage `json:"result"`
		}
		json.Unmarshal(line, &m)
		if m.Error != nil {
			codes = append(codes, m.Error.Code)
		} else if m.ID == 1.0 && len(m.Result) > 0 {
			codes = append(codes, 0)
		}
	}
	if len(codes) != 3 || codes[0] != -32600 || codes[1] != -32700 || codes[2] != 0 {
		t.Errorf("replies %v; want -32600, -32700, then the initialize result", codes)
	}
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not exit when stdin closed")
	}
	outW.Close()
}

// Servers see the binary's version as clientInfo, not a placeholder.
func TestClientInfoCarriesVersion(t *testing.T) {
	got := make(chan string, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "probe", Version: "1"}, nil)
	// 2026-07-28 clients send clientInfo in each request's _meta; older
	// ones in initialize.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			var p struct {
				Meta struct {
					ClientInfo *mcp.Implementation `json:"io.modelcontextprotocol/clientInfo"`
				} `json:"_meta"`
				ClientInfo *mcp.Implementation `json:"clientInfo"`
			}
			b, _ := json.Marshal(req.GetParams())
			json.Unmarshal(b, &p)
			for _, ci := range []*mcp.Implementation{p.Meta.ClientInfo, p.ClientInfo} {
				if ci != nil {
					select {
					case got <- ci.Version:
					default:
					}
				}
			}
			return next(ctx, method, req)
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx, st)
	var out, errOut bytes.Buffer
	runLs(ctx, &out, &errOut, flags(), []host.Origin{{Label: "probe", Transport: ct}}, false)
	select {
	case v := <-got:
		if v != version() || v == "0" || v == "dev" {
			t.Errorf("clientInfo.version %q, want %q", v, version())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the host sent no clientInfo")
	}
}

func TestPullShowsProgressOnATerminalOnly(t *testing.T) {
	for _, width := range []int{0, 80} {
		onTerminal(t, width)
		var out, errOut bytes.Buffer
		if err := runPull(context.Background(), &out, &errOut, flags(), []host.Origin{examplesOrigin(t)}, t.TempDir(), false, false); err != nil {
			t.Fatal(err)
		}
		shown := strings.Contains(errOut.String(), "pulling 1/5: docs:")
		if shown != (width > 0) || strings.Contains(out.String(), "pulling") {
			t.Errorf("width %d: progress shown %v; stderr %q", width, shown, errOut.String())
		}
	}
}
