package server_test

import (
	"context"
	"encoding/json"

	"regexp"
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

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestConformanceSuite runs the official MCP conformance suite's SEP-2640
// server scenarios against `skillport serve --http --stateless` (the suite
// speaks the 2026-07-28 protocol, which go-sdk serves over stateless HTTP).
func TestConformanceSuite(t *testing.T) {
	runConformance(t, serveHTTP(t, examples, "--stateless"))
}

// TestConformanceSuiteGit runs the same scenarios against a server whose
// skills come from a git repository (file://) holding the example catalog.
func TestConformanceSuiteGit(t *testing.T) {
	repo := gittest.BareRepoOf(t, examples)
	runConformance(t, serveHTTP(t, "git+file://"+repo, "--stateless", "--cache-dir", t.TempDir()))
}

func runConformance(t *testing.T, srv *served) {
	wantChecks := map[string]int{
		"sep-2640-skills-enumeration": 32,
		"sep-2640-skills-manifest":    6,
		"sep-2640-skills-directory":   7,
	}
	for scenario, n := range wantChecks {
		t.Run(scenario, func(t *testing.T) {
			res, err := peers.Run(context.Background(), peers.Command{
				Args: append(peers.Conformance(t), "server", "--url", srv.URL, "--scenario", scenario),
				Dir:  t.TempDir(),
				Env:  peers.Env(t),
			})
			out := ansiRE.ReplaceAllString(string(res.Stdout)+string(res.Stderr), "")
			if err != nil {
				t.Fatalf("conformance %s failed: %v\n%s", scenario, err, out)
			}
			for _, bad := range []string{"FAILURE", "WARNING", "SKIPPED"} {
				for _, line := range strings.Split(out, "\n") {
					if strings.Contains(line, "] "+bad) {
						t.Errorf("conformance %s: %s", scenario, strings.TrimSpace(line))
					}
				}
			}
			summary := regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings`).FindStringSubmatch(out)
			if summary == nil {
				t.Fatalf("conformance %s printed no summary line:\n%s", scenario, out)
			}
			t.Logf("%s: %s", scenario, summary[0])
			if summary[1] != summary[2] || summary[3] != "0" || summary[4] != "0" {
				t.Errorf("conformance %s: %s, want every check passed, 0 failed, 0 warnings\n%s", scenario, summary[0], out)
			}
			if got := summary[2]; got != itoa(n) {
				t.Errorf("conformance %s ran %s checks, want %d (a check was dropped or added: look at the output)\n%s", scenario, got, n, out)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
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
		{"http-stateless-modern", "2026-07-28", []string{"--era", "modern", "--url", stateless.URL}},
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
