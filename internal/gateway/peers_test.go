package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/peers"
	"github.com/skillport/skillport/internal/skilltest"
)

// skillportBin is the skillport command, built once for the whole run.
func skillportBin(t testing.TB) string {
	t.Helper()
	return skilltest.Binary(t)
}

// peerConfig writes a gateway.json with two upstreams serving the example
// skills: "docs", our own server over stdio (the built binary), and "ts",
// the TypeScript reference server over Streamable HTTP. Every skill is
// approved by policy; approvals stay in the test's directory.
func peerConfig(t *testing.T, only ...string) string {
	t.Helper()
	bin := skillportBin(t)
	servers := map[string]any{}
	if len(only) == 0 || slices.Contains(only, "docs") {
		servers["docs"] = map[string]any{"command": bin, "args": []string{"serve", "--watch=false", examples}}
	}
	if len(only) == 0 || slices.Contains(only, "ts") {
		servers["ts"] = map[string]any{"url": peers.StartTSServer(t, examples)}
	}
	dir := t.TempDir()
	cfg := map[string]any{
		"mcpServers": servers,
		"approvals": map[string]any{
			"allow": []map[string]any{{"origin": "*", "skill": "*"}},
			"store": filepath.Join(dir, "approvals.json"),
		},
		"cache": false,
	}
	data, _ := json.MarshalIndent(cfg, "", "  ")
	file := filepath.Join(dir, "gateway.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// gatewayHTTP starts `skillport gateway --http 127.0.0.1:0` and returns its URL.
func gatewayHTTP(t *testing.T, config string, flags ...string) string {
	t.Helper()
	cmd := exec.Command(skillportBin(t), append([]string{"gateway", "--config", config, "--http", "127.0.0.1:0"}, flags...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var stderr strings.Builder
	urlc := make(chan string, 1)
	re := regexp.MustCompile(`gateway listening at (http://\S+/mcp)`)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			mu.Lock()
			stderr.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urlc <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("skillport gateway did not exit within 10s of SIGINT")
		}
	})
	select {
	case u := <-urlc:
		return u
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("skillport gateway printed no listening line within 30s:\n%s", stderr.String())
	}
	return ""
}

type agentReport struct {
	Instructions  string   `json:"instructions"`
	Tools         []string `json:"tools"`
	ReadSkillEnum []string `json:"readSkillEnum"`
	SearchNames   []string `json:"searchNames"`
	Followed      string   `json:"followed"`
	Prompts       []string `json:"prompts"`
	Error         string   `json:"error"`
	Steps         []struct {
		Tool    string `json:"tool"`
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"steps"`
}

func (r *agentReport) step(tool string) string {
	for _, s := range r.Steps {
		if s.Tool == tool {
			return s.Text
		}
	}
	return ""
}

// runAgent runs testdata/ts-agent.mjs (the official TypeScript SDK client)
// against the gateway: target is "--url URL" or "-- command args...".
func runAgent(t *testing.T, query, skill string, target ...string) *agentReport {
	t.Helper()
	script, _ := filepath.Abs(filepath.Join("testdata", "ts-agent.mjs"))
	args := append([]string{peers.Node(t), script, peers.Dir(t), query, skill}, target...)
	res, err := peers.Run(context.Background(), peers.Command{Args: args, Env: peers.Env(t), Timeout: 90 * time.Second})
	var r agentReport
	if jerr := json.Unmarshal(res.Stdout, &r); jerr != nil {
		t.Fatalf("ts-agent printed no report: %v (run: %v)\n%s\n%s", jerr, err, res.Stdout, res.Stderr)
	}
	if err != nil {
		t.Fatalf("ts-agent failed: %v\nreport: %s", err, res.Stdout)
	}
	return &r
}

// checkAgent asserts what an agent saw when it loaded code-review from origin.
func checkAgent(t *testing.T, r *agentReport, origin string) {
	t.Helper()
	if want := []string{"list_skill_dir", "read_skill", "read_skill_file", "search_skills"}; !slices.Equal(r.Tools, want) {
		t.Errorf("tools %v, want %v", r.Tools, want)
	}
	for _, want := range []string{"<available_skills>", "<source>mcp:docs</source>", "<source>mcp:ts</source>", "docs__code-review", "ts__code-review"} {
		if !strings.Contains(r.Instructions, want) {
			t.Errorf("instructions lack %q", want)
		}
	}
	if !slices.Contains(r.ReadSkillEnum, "ts__pdf-processing") {
		t.Errorf("read_skill enum %v lacks ts__pdf-processing", r.ReadSkillEnum)
	}
	if len(r.SearchNames) == 0 || !strings.HasSuffix(r.SearchNames[0], "code-review") {
		t.Errorf("search ranked %v", r.SearchNames)
	}
	body := r.step("read_skill")
	for _, want := range []string{`source="mcp:` + origin + `"`, `trust="untrusted"`, "Read the whole change"} {
		if !strings.Contains(body, want) {
			t.Errorf("read_skill result lacks %q:\n%s", want, body)
		}
	}
	if r.Followed != "references/CHECKLIST.md" {
		t.Errorf("the agent followed %q, want references/CHECKLIST.md", r.Followed)
	}
	if file := r.step("read_skill_file"); !strings.Contains(file, "# Review checklist") {
		t.Errorf("read_skill_file result:\n%s", file)
	}
	if !slices.Contains(r.Prompts, origin+"__code-review") {
		t.Errorf("prompts %v lack %s__code-review", r.Prompts, origin)
	}
}

// TestTSClientStdio: the official TypeScript SDK client drives `skillport
// gateway` over stdio, with our server and the TS reference server upstream;
// the skill comes from the TS reference server.
func TestTSClientStdio(t *testing.T) {
	cfg := peerConfig(t)
	r := runAgent(t, "review a pull request diff", "ts__code-review", "--", skillportBin(t), "gateway", "--config", cfg)
	checkAgent(t, r, "ts")
}

// TestTSClientHTTP: the same over Streamable HTTP, loading from our server.
func TestTSClientHTTP(t *testing.T) {
	cfg := peerConfig(t)
	url := gatewayHTTP(t, cfg)
	r := runAgent(t, "review a pull request diff", "docs__code-review", "--url", url)
	checkAgent(t, r, "docs")
}

// TestInspectorCLI: the MCP Inspector CLI lists the gateway's tools and
// calls read_skill.
func TestInspectorCLI(t *testing.T) {
	cfg := peerConfig(t)
	server := []string{"--", skillportBin(t), "gateway", "--config", cfg}
	res, err := peers.Run(context.Background(), peers.Command{
		Args: append(append(peers.Inspector(t), "--method", "tools/list"), server...), Env: peers.Env(t), Timeout: 90 * time.Second})
	if err != nil {
		t.Fatalf("inspector tools/list: %v", err)
	}
	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res.Stdout, &list); err != nil {
		t.Fatalf("inspector tools/list output: %v\n%s", err, res.Stdout)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if tl.Name == "read_skill" && !strings.Contains(tl.Description, "ts__pdf-processing") {
			t.Errorf("read_skill description lacks the catalog:\n%s", tl.Description)
		}
	}
	slices.Sort(names)
	if want := []string{"list_skill_dir", "read_skill", "read_skill_file", "search_skills"}; !slices.Equal(names, want) {
		t.Errorf("inspector saw tools %v, want %v", names, want)
	}

	res, err = peers.Run(context.Background(), peers.Command{
		Args: append(append(peers.Inspector(t), "--method", "tools/call", "--tool-name", "read_skill", "--tool-arg", "name=ts__pdf-processing"), server...),
		Env:  peers.Env(t), Timeout: 90 * time.Second})
	if err != nil {
		t.Fatalf("inspector tools/call read_skill: %v", err)
	}
	var call struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res.Stdout, &call); err != nil || len(call.Content) == 0 {
		t.Fatalf("inspector tools/call output: %v\n%s", err, res.Stdout)
	}
	text := call.Content[0].Text
	if call.IsError || !strings.Contains(text, `source="mcp:ts"`) || !strings.Contains(text, "# PDF processing") || !strings.Contains(text, "<file>references/FORMS.md</file>") {
		t.Errorf("inspector read_skill result (error %v):\n%s", call.IsError, text)
	}
}

// TestTSSkillsClientVerifiesRepublished: the official TypeScript
// SkillsClient lists the gateway's re-published skills and reads and
// verifies every file (size, digest, frontmatter) with its own checks.
// It does so over stdio and over HTTP with no flag and with --stateless, in
// the 2026-07-28 era and the legacy one.
func TestTSSkillsClientVerifiesRepublished(t *testing.T) {
	cfg := peerConfig(t)
	def, stateless := gatewayHTTP(t, cfg), gatewayHTTP(t, cfg, "--stateless")
	targets := map[string][]string{
		"stdio":                 {"--", skillportBin(t), "gateway", "--config", cfg},
		"http-modern":           {"--era", "modern", "--url", def},
		"http-legacy":           {"--era", "legacy", "--url", def},
		"http-stateless-modern": {"--era", "modern", "--url", stateless},
		"http-stateless-legacy": {"--era", "legacy", "--url", stateless},
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) { tsVerifiesRepublished(t, target) })
	}
}

func tsVerifiesRepublished(t *testing.T, target []string) {
	res, err := peers.Run(context.Background(), peers.Command{
		Args: append([]string{peers.Node(t), peers.Script(t, "ts-skills-client.mjs"), "--directories"}, target...),
		Env:  peers.Env(t), Timeout: 120 * time.Second})
	var rep struct {
		Supported bool `json:"supported"`
		Skills    []struct {
			URI      string `json:"uri"`
			Files    int    `json:"files"`
			Verified bool   `json:"verified"`
		} `json:"skills"`
		Errors []map[string]any `json:"errors"`
	}
	if jerr := json.Unmarshal(res.Stdout, &rep); jerr != nil {
		t.Fatalf("ts-skills-client report: %v (%v)\n%s\n%s", jerr, err, res.Stdout, res.Stderr)
	}
	if err != nil || !rep.Supported || len(rep.Errors) > 0 {
		t.Fatalf("ts-skills-client against the gateway: %v\n%s", err, res.Stdout)
	}
	var uris []string
	for _, s := range rep.Skills {
		uris = append(uris, s.URI)
		if !s.Verified || s.Files == 0 {
			t.Errorf("%s: verified=%v files=%d", s.URI, s.Verified, s.Files)
		}
	}
	for _, want := range []string{"skill://docs/pdf-processing/SKILL.md", "skill://ts/pdf-processing/SKILL.md", "skill://ts/acme/billing/refunds/SKILL.md"} {
		if !slices.Contains(uris, want) {
			t.Errorf("TS client did not see %s: %v", want, uris)
		}
	}
}

// TestCLIUsageErrors: `skillport gateway` without a usable configuration
// exits 2 with a message naming the file and field.
func TestCLIUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "gw.json")
	os.WriteFile(bad, []byte(`{"mcpServers": {"a": {"command": "x", "include": ["[oops"]}}}`), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gateway"}, "--config FILE is required"},
		{[]string{"gateway", "--config", bad}, bad + `: mcpServers["a"]: include[0]`},
		{[]string{"gateway", "--config", filepath.Join(t.TempDir(), "missing.json")}, "missing.json"},
		{[]string{"gateway", "--config", bad, "extra"}, "unknown command"},
		{[]string{"gateway", "--config", bad, "--max-sessions", "5"}, "--max-sessions apply to --http only"},
		{[]string{"gateway", "--config", bad, "--http", "127.0.0.1:0", "--session-timeout", "-1s"}, "--session-timeout must not be negative"},
	} {
		out, err := exec.Command(skillportBin(t), c.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("skillport %v: %v\n%s\nwant exit 2 and %q", c.args, err, out, c.want)
		}
	}
}

// notApplicableGateway lists, per scenario, the checks that do not apply to
// the gateway (the README has the same list): the suite exercises them only
// through its own diagnostic tools, which a production server does not
// register.
var notApplicableGateway = map[string]map[string]string{
	"server-stateless": {
		"ServerRejectsUndeclaredCapability":       "needs the diagnostic tool test_missing_capability",
		"MissingCapabilityHttp400":                "needs the diagnostic tool test_missing_capability",
		"HttpServerNoIndependentRequestsOnStream": "needs the diagnostic tool test_streaming_elicitation",
		"ServerNoLogWithoutLogLevel":              "needs the diagnostic tool test_logging_tool",
		// The suite calls its hook tool to change the list; the gateway
		// answers the unknown tool with -32602, which the suite reads as
		// a change that was not announced (a SHOULD, so a warning).
		"ServerSendsPromptsListChangedOnSubscription": "needs the diagnostic hook test_trigger_prompt_change",
		"ServerSendsToolsListChangedOnSubscription":   "needs the diagnostic hook test_trigger_tool_change",
	},
}

// TestConformanceRepublished runs the official MCP conformance suite's
// server scenarios against `skillport gateway --http` with no flag (one
// endpoint for every protocol revision) and with --stateless,
// re-publishing the TypeScript reference server's skills: every check
// passes except those listed as not applicable. (With two origins serving
// the same skills, the one warning would be sep-2640-names-should-be-unique:
// the gateway keeps both, under distinct URIs, as it must.)
func TestConformanceRepublished(t *testing.T) {
	cfg := peerConfig(t, "ts")
	for _, mode := range [][]string{nil, {"--stateless"}} {
		url := gatewayHTTP(t, cfg, mode...)
		name := "default"
		if mode != nil {
			name = mode[0]
		}
		for _, scenario := range []string{"sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory",
			"server-stateless", "caching", "http-header-validation", "dns-rebinding-protection"} {
			t.Run(name+"/"+scenario, func(t *testing.T) {
				checks := peers.ConformanceServer(t, url, scenario)
				for _, bad := range peers.JudgeChecks(checks, notApplicableGateway[scenario]) {
					t.Error(bad)
				}
				if strings.HasPrefix(scenario, "sep-2640-") && len(checks) < 6 {
					t.Errorf("conformance %s ran only %d checks", scenario, len(checks))
				}
			})
		}
	}
}
