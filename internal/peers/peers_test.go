package peers

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/skilltest"
)

// skillsScenarios are the SEP-2640 scenarios the conformance suite must offer.
var skillsScenarios = []string{
	"sep-2640-skills-enumeration",
	"sep-2640-skills-manifest",
	"sep-2640-skills-directory",
	"sep-2640-client-no-prefetch",
	"sep-2640-client-verify-digest",
	"sep-2640-client-verify-size",
	"sep-2640-client-verify-frontmatter",
}

// writeSkills creates a small skills folder. The first skill in URI order
// (pdf-processing) has a subdirectory, as sep-2640-skills-directory needs.
func writeSkills(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"pdf-processing/SKILL.md":            "---\nname: pdf-processing\ndescription: Extract text and tables from PDF files.\nmetadata:\n  author: example\n---\n\n# PDF processing\n\nSee references/GUIDE.md.\n",
		"pdf-processing/references/GUIDE.md": "# Guide\n\nUse a PDF library.\n",
		"review-code/SKILL.md":               "---\nname: review-code\ndescription: Review code changes.\n---\nBe thorough.\n",
	}
	skilltest.WriteFiles(t, dir, files)
	return dir
}

func TestNodeIs22(t *testing.T) {
	node := Node(t)
	res, err := Run(context.Background(), Command{Args: []string{node, "--version"}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(res.Stdout)); !strings.HasPrefix(v, NodeMajor) {
		t.Fatalf("%s --version = %q, want %s*", node, v, NodeMajor)
	}
	// PATH from Env must resolve `node` to the same binary.
	res, err = Run(context.Background(), Command{Args: []string{"/bin/sh", "-c", "node --version"}, Env: Env(t), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(res.Stdout)); !strings.HasPrefix(v, NodeMajor) {
		t.Fatalf("node on Env(t)'s PATH is %q, want %s*", v, NodeMajor)
	}
}

func TestConformanceListsSkillsScenarios(t *testing.T) {
	res, err := Run(context.Background(), Command{Args: append(Conformance(t), "list"), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	for _, s := range skillsScenarios {
		if !strings.Contains(out, "- "+s+" ") {
			t.Errorf("conformance list does not offer %s:\n%s", s, out)
		}
	}
	res, err = Run(context.Background(), Command{Args: append(Conformance(t), "--version"), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(res.Stdout)); v != "0.2.0-alpha.12" {
		t.Errorf("conformance --version = %q, want 0.2.0-alpha.12", v)
	}
}

func TestInspectorHasSkillsVerify(t *testing.T) {
	res, err := Run(context.Background(), Command{Args: append(Inspector(t), "--help"), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--method <method>", "--verify", "--protocol-era <era>"} {
		if !strings.Contains(string(res.Stdout), want) {
			t.Errorf("inspector --cli --help lacks %q:\n%s", want, res.Stdout)
		}
	}
}

// clientReport is the JSON printed by ts-skills-client.mjs.
type clientReport struct {
	ProtocolVersion string `json:"protocolVersion"`
	Skills          []struct {
		URI      string `json:"uri"`
		Name     string `json:"name"`
		Files    int    `json:"files"`
		Verified bool   `json:"verified"`
	} `json:"skills"`
	Errors []json.RawMessage `json:"errors"`
}

func runTSClient(t *testing.T, args ...string) clientReport {
	t.Helper()
	argv := append([]string{Node(t), Script(t, "ts-skills-client.mjs")}, args...)
	res, err := Run(context.Background(), Command{Args: argv, Env: Env(t), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var rep clientReport
	if err := json.Unmarshal(res.Stdout, &rep); err != nil {
		t.Fatalf("ts-skills-client output is not its JSON report: %v\n%s", err, res.Stdout)
	}
	files := map[string]int{}
	for _, s := range rep.Skills {
		if !s.Verified {
			t.Errorf("%s not verified", s.URI)
		}
		files[s.Name] = s.Files
	}
	if files["pdf-processing"] != 2 || files["review-code"] != 1 || len(rep.Errors) != 0 {
		t.Fatalf("unexpected report: %s", res.Stdout)
	}
	return rep
}

func TestTSClientAgainstTSServer(t *testing.T) {
	dir := writeSkills(t)
	url := StartTSServer(t, dir)
	t.Run("http-auto", func(t *testing.T) {
		if rep := runTSClient(t, "--directories", "--url", url); rep.ProtocolVersion != "2026-07-28" {
			t.Errorf("negotiated %q, want 2026-07-28", rep.ProtocolVersion)
		}
	})
	t.Run("stdio-legacy", func(t *testing.T) {
		rep := runTSClient(t, "--era", "legacy", "--", Node(t), Script(t, "ts-skills-server.mjs"), dir)
		if rep.ProtocolVersion != "2025-11-25" {
			t.Errorf("negotiated %q, want 2025-11-25", rep.ProtocolVersion)
		}
	})
}

// TestConformanceAgainstReferencePeers runs the suite's SEP-2640 scenarios
// against the TypeScript reference server and client, which pass them all.
func TestConformanceAgainstReferencePeers(t *testing.T) {
	url := StartTSServer(t, writeSkills(t))
	for _, scenario := range skillsScenarios[:3] {
		t.Run(scenario, func(t *testing.T) {
			args := append(Conformance(t), "server", "--url", url, "--scenario", scenario, "-o", t.TempDir())
			if _, err := Run(context.Background(), Command{Args: args, Timeout: 2 * time.Minute}); err != nil {
				t.Fatal(err)
			}
		})
	}
	client := ShellJoin(Node(t), Script(t, "ts-skills-client.mjs"), "--url")
	for _, scenario := range skillsScenarios[3:] {
		t.Run(scenario, func(t *testing.T) {
			args := append(Conformance(t), "client", "--scenario", scenario, "--command", client, "--timeout", "60000")
			if _, err := Run(context.Background(), Command{Args: args, Env: Env(t), Timeout: 2 * time.Minute}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestInspectorVerifiesTSServer(t *testing.T) {
	dir := writeSkills(t)
	url := StartTSServer(t, dir)
	env := append(Env(t), "HOME="+t.TempDir()) // the inspector creates ~/.mcp-inspector
	for name, target := range map[string][]string{
		"http":  {url},
		"stdio": {"--", Node(t), Script(t, "ts-skills-server.mjs"), dir},
	} {
		t.Run(name, func(t *testing.T) {
			args := append(Inspector(t), "--method", "skills/list", "--verify", "-q")
			args = append(args, target...)
			res, err := Run(context.Background(), Command{Args: args, Env: env, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
			if len(lines) != 2 {
				t.Fatalf("want one report per skill, got:\n%s", res.Stdout)
			}
			for _, line := range lines {
				var rep struct {
					URI     string `json:"uri"`
					Outcome string `json:"outcome"`
				}
				if err := json.Unmarshal([]byte(line), &rep); err != nil || rep.Outcome != "verified" {
					t.Errorf("report %s: outcome %q (%v)", line, rep.Outcome, err)
				}
			}
		})
	}
}

func TestRunReportsExitAndTail(t *testing.T) {
	node := Node(t)
	res, err := Run(context.Background(), Command{
		Args:    []string{node, "-e", `console.log("out-line"); console.error("err-line"); process.exit(3)`},
		Timeout: 30 * time.Second,
	})
	if err == nil || res.ExitCode != 3 {
		t.Fatalf("want exit 3 and an error, got %d, %v", res.ExitCode, err)
	}
	for _, want := range []string{"exit status 3", "out-line", "err-line"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}

	start := time.Now()
	res, err = Run(context.Background(), Command{
		Args:    []string{"/bin/sh", "-c", "echo started; sleep 30 & sleep 30"},
		Timeout: 300 * time.Millisecond,
	})
	if err == nil || res.ExitCode != -1 || !strings.Contains(err.Error(), "killed") || !strings.Contains(err.Error(), "started") {
		t.Fatalf("want a timeout error with the output tail, got %d, %v", res.ExitCode, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("timeout took %v: spawned children were not killed", d)
	}
}

func TestShellJoin(t *testing.T) {
	got := ShellJoin("/usr/bin/node", "/tmp/a dir/x.mjs", "it's", "--url", "")
	want := `/usr/bin/node '/tmp/a dir/x.mjs' 'it'\''s' --url ''`
	if got != want {
		t.Fatalf("ShellJoin = %s, want %s", got, want)
	}
}

func TestCheckPinnedNamesTheProblem(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("package.json", `{"dependencies": {"@scope/a": "1.0.0", "b": "2.0.0", "c": "3.0.0"}}`)
	write("node_modules/@scope/a/package.json", `{"version": "1.0.0"}`)
	write("node_modules/b/package.json", `{"version": "2.0.1"}`)
	err := checkPinned(dir)
	if err == nil {
		t.Fatal("checkPinned accepted a stale install")
	}
	for _, want := range []string{"b is 2.0.1, package.json pins 2.0.0", "c is not installed", "make interop", "npm ci"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "@scope/a") {
		t.Errorf("error blames the correctly installed @scope/a: %v", err)
	}
}
