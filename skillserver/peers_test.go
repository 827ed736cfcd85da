package skillserver_test

import (
	"context"
	"encoding/json"
	"fmt"

	"strings"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gittest"
	"github.com/skillport/skillport/internal/peers"
)

// exampleSkills lists the skill URIs of the example catalog.
func exampleSkills(t *testing.T) []string {
	t.Helper()
	c, err := catalog.OpenDir(examples, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range c.Skills() {
		out = append(out, s.URI)
	}
	if len(out) != 5 {
		t.Fatalf("the example catalog has %d skills, the peer tests expect 5", len(out))
	}
	return out
}

// untestableStateless are the server-stateless checks the conformance suite
// can exercise only against a server that registers the suite's own
// diagnostic tools (test_missing_capability, test_streaming_elicitation,
// test_logging_tool, test_trigger_*_change); the README lists them.
var untestableStateless = map[string]string{
	"ServerRejectsUndeclaredCapability":       "needs the diagnostic tool test_missing_capability",
	"MissingCapabilityHttp400":                "needs the diagnostic tool test_missing_capability",
	"HttpServerNoIndependentRequestsOnStream": "needs the diagnostic tool test_streaming_elicitation",
	"ServerNoLogWithoutLogLevel":              "needs the diagnostic tool test_logging_tool",
}

// notApplicableServe lists, per scenario, the checks that do not apply to
// `skillport serve` (the README has the same list).
var notApplicableServe = map[string]map[string]string{
	"server-stateless": merge(untestableStateless, map[string]string{
		"ServerSendsPromptsListChangedOnSubscription": "serve has no prompts, so it declares no prompts.listChanged",
		"ServerSendsToolsListChangedOnSubscription":   "serve has no tools, so it declares no tools.listChanged",
	}),
	"http-header-validation": {
		"ServerRejectsMismatchedNameHeader":  "the Mcp-Name cases call a tool, and serve has none",
		"ServerAcceptsWhitespaceHeaderValue": "the Mcp-Name cases call a tool, and serve has none",
		"ServerRejectsMissingNameHeader":     "the Mcp-Name cases call a tool, and serve has none",
	},
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// serverScenarios are the conformance server scenarios run against every
// mode, with the number of checks of those that must all run and pass.
var serverScenarios = map[string]int{
	"sep-2640-skills-enumeration": 32,
	"sep-2640-skills-manifest":    6,
	"sep-2640-skills-directory":   7,
	"server-stateless":            0,
	"caching":                     0,
	"http-header-validation":      0,
	"dns-rebinding-protection":    0,
}

// TestConformanceSuite runs the official MCP conformance suite's server
// scenarios against `skillport serve --http` with no flag (2026-07-28
// requests served statelessly on the same endpoint as older revisions'
// sessions) and with --stateless: every check passes except those listed
// as not applicable, and the SEP-2640 scenarios run every check.
func TestConformanceSuite(t *testing.T) {
	for _, mode := range [][]string{nil, {"--stateless"}} {
		srv := serveHTTP(t, examples, mode...)
		name := "default"
		if mode != nil {
			name = mode[0]
		}
		for scenario, n := range serverScenarios {
			t.Run(name+"/"+scenario, func(t *testing.T) {
				checks := peers.ConformanceServer(t, srv.URL, scenario)
				for _, bad := range peers.JudgeChecks(checks, notApplicableServe[scenario]) {
					t.Error(bad)
				}
				if n > 0 && len(checks) != n {
					t.Errorf("conformance %s ran %d checks, want %d (a check was dropped or added)", scenario, len(checks), n)
				}
			})
		}
	}
}

// inspectorTarget returns the inspector arguments that reach our server over
// a transport, after the method flags.
func inspectorTargets(t *testing.T) map[string]func(flags ...string) []string {
	stateful := serveHTTP(t, examples)
	stateless := serveHTTP(t, examples, "--stateless")
	return map[string]func(flags ...string) []string{
		"stdio": func(flags ...string) []string {
			return append(append(peers.Inspector(t), flags...), "--", skillportBin, "serve", examples)
		},
		"http": func(flags ...string) []string {
			return append(append(peers.Inspector(t), stateful.URL), flags...)
		},
		"http-modern": func(flags ...string) []string {
			return append(append(peers.Inspector(t), stateful.URL, "--protocol-era", "modern"), flags...)
		},
		"http-stateless-modern": func(flags ...string) []string {
			return append(append(peers.Inspector(t), stateless.URL, "--protocol-era", "modern"), flags...)
		},
	}
}

// TestInspectorVerify runs the MCP Inspector CLI's skills verifier, which
// reads and checks every file of every skill.
func TestInspectorVerify(t *testing.T) {
	uris := exampleSkills(t)
	home := t.TempDir()
	env := append(peers.Env(t), "HOME="+home)
	for name, target := range inspectorTargets(t) {
		t.Run(name, func(t *testing.T) {
			check := func(t *testing.T, args []string, wantSkills int) {
				res, err := peers.Run(context.Background(), peers.Command{Args: args, Env: env, Dir: home})
				if err != nil {
					t.Fatalf("inspector --verify failed (exit %d): %v", res.ExitCode, err)
				}
				lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
				if len(lines) != wantSkills {
					t.Fatalf("inspector verified %d skills, want %d:\n%s", len(lines), wantSkills, res.Stdout)
				}
				for _, l := range lines {
					var r struct {
						URI     string `json:"uri"`
						OK      bool   `json:"ok"`
						Outcome string `json:"outcome"`
					}
					if err := json.Unmarshal([]byte(l), &r); err != nil || !r.OK || r.Outcome != "verified" {
						t.Errorf("inspector report: %s", l)
					}
				}
			}
			t.Run("skills/list", func(t *testing.T) {
				check(t, target("--method", "skills/list", "--verify"), len(uris))
			})
			for _, u := range uris {
				t.Run("skills/get "+u, func(t *testing.T) {
					check(t, target("--method", "skills/get", "--uri", u, "--verify"), 1)
				})
			}
		})
	}
}

type tsReport struct {
	ProtocolVersion string `json:"protocolVersion"`
	Supported       bool   `json:"supported"`
	DirectoryRead   bool   `json:"directoryRead"`
	Skills          []struct {
		URI       string `json:"uri"`
		Files     int    `json:"files"`
		Verified  bool   `json:"verified"`
		Directory int    `json:"directory"`
	} `json:"skills"`
	Errors []json.RawMessage `json:"errors"`
}

// TestTypeScriptSkillsClient runs the TypeScript SDK's reference SkillsClient
// (interop/ts-skills-client.mjs): it lists every skill and reads and
// verifies every file, and walks the directories.
func TestTypeScriptSkillsClient(t *testing.T) {
	uris := exampleSkills(t)
	c, err := catalog.OpenDir(examples, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	stateful := serveHTTP(t, examples)
	stateless := serveHTTP(t, examples, "--stateless")
	client := peers.Script(t, "ts-skills-client.mjs")
	cases := []struct {
		name, wantVersion string
		target            []string
	}{
		{"stdio-auto", "2026-07-28", []string{"--era", "auto", "--", skillportBin, "serve", examples}},
		{"stdio-legacy", "2025-11-25", []string{"--era", "legacy", "--", skillportBin, "serve", examples}},
		{"http-legacy", "2025-11-25", []string{"--era", "legacy", "--url", stateful.URL}},
		{"http-modern", "2026-07-28", []string{"--era", "modern", "--url", stateful.URL}},
		{"http-auto", "2026-07-28", []string{"--era", "auto", "--url", stateful.URL}},
		{"http-stateless-modern", "2026-07-28", []string{"--era", "modern", "--url", stateless.URL}},
		{"http-stateless-legacy", "2025-11-25", []string{"--era", "legacy", "--url", stateless.URL}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{peers.Node(t), client, "--directories"}, tc.target...)
			res, err := peers.Run(context.Background(), peers.Command{Args: args, Env: peers.Env(t)})
			var rep tsReport
			if jerr := json.Unmarshal(res.Stdout, &rep); jerr != nil {
				t.Fatalf("the TS client printed no JSON report (%v): %v", jerr, err)
			}
			if err != nil || len(rep.Errors) > 0 {
				t.Fatalf("TS SkillsClient reported errors: %s (%v)", res.Stdout, err)
			}
			if !rep.Supported || !rep.DirectoryRead || rep.ProtocolVersion != tc.wantVersion {
				t.Errorf("supported=%v directoryRead=%v protocol=%s, want true, true, %s", rep.Supported, rep.DirectoryRead, rep.ProtocolVersion, tc.wantVersion)
			}
			if len(rep.Skills) != len(uris) {
				t.Fatalf("TS client saw %d skills, want %d", len(rep.Skills), len(uris))
			}
			for i, s := range rep.Skills {
				want := c.Skill(uris[i])
				if s.URI != want.URI || !s.Verified || s.Files != len(want.Files) {
					t.Errorf("skill %d: %+v, want %s verified with %d files", i, s, want.URI, len(want.Files))
				}
				if n := countTree(c, want.Root); s.Directory != n {
					t.Errorf("%s: walking resources/directory/read saw %d entries, want %d", s.URI, s.Directory, n)
				}
			}
		})
	}
}

// countTree counts the files and directories below a directory resource.
func countTree(c *catalog.Catalog, uri string) int {
	n := 0
	for _, ch := range c.Dir(uri).Children {
		n++
		if ch.IsDir() {
			n += countTree(c, ch.URI)
		}
	}
	return n
}

// TestConformanceSuiteGit runs the SEP-2640 scenarios against a server
// whose skills come from a git repository (file://) holding the example
// catalog, with no flag and with --stateless.
func TestConformanceSuiteGit(t *testing.T) {
	repo := gittest.BareRepoOf(t, examples)
	for _, mode := range [][]string{nil, {"--stateless"}} {
		srv := serveHTTP(t, "git+file://"+repo, append(mode, "--cache-dir", t.TempDir())...)
		sepScenarios(t, fmt.Sprint(mode), srv.URL)
	}
}

// sepScenarios runs the SEP-2640 server scenarios against url: every
// check passes, and each scenario runs all its checks.
func sepScenarios(t *testing.T, name, url string) {
	for scenario, n := range serverScenarios {
		if !strings.HasPrefix(scenario, "sep-2640-") {
			continue
		}
		t.Run(name+scenario, func(t *testing.T) {
			checks := peers.ConformanceServer(t, url, scenario)
			for _, bad := range peers.JudgeChecks(checks, nil) {
				t.Error(bad)
			}
			if len(checks) != n {
				t.Errorf("conformance %s ran %d checks, want %d", scenario, len(checks), n)
			}
		})
	}
}
