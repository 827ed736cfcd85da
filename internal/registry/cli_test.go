package registry_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/gittest"
	"github.com/skillport/skillport/internal/peers"
	"github.com/skillport/skillport/internal/skilltest"
)

// skillportBin is the skillport command, built once for the whole run.
func skillportBin(t testing.TB) string {
	t.Helper()
	return skilltest.Binary(t)
}

func skillport(t *testing.T, wantExit int, args ...string) string {
	t.Helper()
	cmd := exec.Command(skillportBin(t), args...)
	cmd.Env = append(os.Environ(), "SKILLPORT_PUBLISHER=ci")
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != wantExit {
		t.Fatalf("skillport %s: exit %d, want %d\n%s", strings.Join(args, " "), code, wantExit, out)
	}
	return string(out)
}

var servingRE = regexp.MustCompile(`serving \d+ skills? \(\d+ files?, [0-9.]+ [KMG]?i?B\) of registry generation \d+ at (http://\S+/mcp)`)

// serveReplica starts skillport serve --http --stateless DSN and returns
// its MCP URL.
func serveReplica(t *testing.T, dsn string) string {
	t.Helper()
	p := peers.Start(t, peers.Command{Args: []string{skillportBin(t), "serve", "--http", "127.0.0.1:0", "--stateless", dsn},
		Env: append(os.Environ(), "SKILLPORT_CURSOR_KEY=shared-secret-for-the-test")})
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, stderr := p.Output()
		if m := servingRE.FindStringSubmatch(stderr); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve %s printed no summary within 30s:\n%s", dsn, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestCLI publishes with the command line, looks at the history, and
// serves two replicas with skillport serve postgres://...
func TestCLI(t *testing.T) {
	dsn := newDB(t)
	dir := copyTree(t, examples)
	out := skillport(t, 0, "publish", "--registry", dsn, "--prefix", "acme", "--commit", "0123abc", dir)
	if !strings.Contains(out, `published "acme": 5 added, 0 changed, 0 removed, 0 unchanged`) || !strings.Contains(out, "+ acme/code-review v1 (2 files,") {
		t.Errorf("publish output:\n%s", out)
	}
	out = skillport(t, 0, "publish", "--registry", dsn, "--prefix", "acme", dir)
	if !strings.Contains(out, "0 added, 0 changed, 0 removed, 5 unchanged; 0 new files (0 B) stored") {
		t.Errorf("re-publish output:\n%s", out)
	}
	out = skillport(t, 1, "publish", "--registry", dsn, "--prefix", "acme/billing", dir)
	if !strings.Contains(out, "overlaps") {
		t.Errorf("overlapping publish output:\n%s", out)
	}
	skillport(t, 2, "publish", "--prefix", "acme", dir) // no registry named

	// A git source publishes its commit's tree and records the commit (in a
	// database of its own, so that the replicas below serve acme alone).
	gitDSN := newDB(t)
	repo := gittest.BareRepoOf(t, examples)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out = skillport(t, 0, "publish", "--registry", gitDSN, "--prefix", "team", "git+file://"+repo)
	if !strings.Contains(out, `published "team": 5 added`) {
		t.Errorf("publish of a git source:\n%s", out)
	}
	out = skillport(t, 0, "registry", "versions", "--registry", gitDSN, "team/code-review")
	head, err := exec.Command("git", "--git-dir", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, strings.TrimSpace(string(head))) {
		t.Errorf("versions of a skill published from git do not name commit %s:\n%s", head, out)
	}

	replicas := []string{serveReplica(t, dsn), serveReplica(t, dsn)}
	for _, u := range replicas {
		base := strings.TrimSuffix(u, "/mcp")
		if code, body := get(t, base+"/readyz"); code != 200 {
			t.Errorf("%s/readyz: %d %s", base, code, body)
		}
		_, metrics := get(t, base+"/metrics")
		for _, m := range []string{"skillport_registry_generation", "skillport_registry_cache_hits_total", "skillport_registry_propagation_seconds"} {
			if !strings.Contains(metrics, m) {
				t.Errorf("%s/metrics lacks %s", base, m)
			}
		}
	}

	os.WriteFile(filepath.Join(dir, "code-review", "NOTES.md"), []byte("notes\n"), 0o644)
	// From a git work tree, the commit checked out is recorded.
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "change"}} {
		git := exec.Command("git", args...)
		git.Dir = dir
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	head, err = exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	out = skillport(t, 0, "publish", "--registry", dsn, "--prefix", "acme", dir)
	if !strings.Contains(out, "~ acme/code-review v2 (3 files,") {
		t.Errorf("publishing a change:\n%s", out)
	}
	if out := skillport(t, 0, "registry", "versions", "--registry", dsn, "acme/code-review"); !strings.Contains(out, strings.TrimSpace(string(head))) {
		t.Errorf("the version published from a git work tree does not record its commit %s:\n%s", head, out)
	}
	out = skillport(t, 0, "registry", "versions", "--registry", dsn, "acme/code-review")
	if !regexp.MustCompile(`(?m)^1 .*ci .*0123abc +sha256:`).MatchString(out) || !regexp.MustCompile(`(?m)^2 +current`).MatchString(out) {
		t.Errorf("versions:\n%s", out)
	}
	if out = skillport(t, 0, "registry", "diff", "--registry", dsn, "acme/code-review", "1", "2"); strings.TrimSpace(out) != "+ NOTES.md (6 B)" {
		t.Errorf("diff:\n%s", out)
	}
	skillport(t, 0, "registry", "rollback", "--registry", dsn, "acme/code-review", "1")
	skillport(t, 0, "registry", "yank", "--registry", dsn, "--reason", "broken", "acme/code-review", "2")
	skillport(t, 1, "registry", "rollback", "--registry", dsn, "acme/code-review", "2")
	skillport(t, 2, "registry", "rollback", "--registry", dsn, "acme/code-review", "two")
	out = skillport(t, 0, "registry", "log", "--registry", dsn, "acme/code-review")
	// The refused rollback is in the log too (docs/registry-governance.md).
	if n := strings.Count(out, "\n"); n != 5 || !strings.Contains(out, "ci yank acme/code-review v2 broken") || !strings.Contains(out, "ci refused rollback acme/code-review v2 registry: acme/code-review version 2: version is yanked") {
		t.Errorf("log:\n%s", out)
	}

	// The official conformance suite and the TS SkillsClient against a replica.
	ctx := context.Background()
	for scenario, n := range map[string]string{"sep-2640-skills-enumeration": "32", "sep-2640-skills-manifest": "6", "sep-2640-skills-directory": "7"} {
		res, err := peers.Run(ctx, peers.Command{
			Args: append(peers.Conformance(t), "server", "--url", replicas[0], "--scenario", scenario),
			Dir:  t.TempDir(), Env: peers.Env(t)})
		out := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(string(res.Stdout)+string(res.Stderr), "")
		m := regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings`).FindStringSubmatch(out)
		if err != nil || m == nil || m[1] != m[2] || m[2] != n || m[3] != "0" || m[4] != "0" {
			t.Errorf("conformance %s against a replica: %v\n%s", scenario, err, out)
		}
	}
	res, err := peers.Run(ctx, peers.Command{Args: []string{peers.Node(t), peers.Script(t, "ts-skills-client.mjs"), "--directories", "--era", "modern", "--url", replicas[1]}, Env: peers.Env(t)})
	var rep struct {
		Supported, DirectoryRead bool
		Skills                   []struct {
			URI      string `json:"uri"`
			Verified bool   `json:"verified"`
		} `json:"skills"`
		Errors []json.RawMessage `json:"errors"`
	}
	if jerr := json.Unmarshal(res.Stdout, &rep); jerr != nil || err != nil || len(rep.Errors) > 0 {
		t.Fatalf("TS SkillsClient against a replica: %v %v\n%s\n%s", err, jerr, res.Stdout, res.Stderr)
	}
	if len(rep.Skills) != 5 {
		t.Errorf("TS SkillsClient saw %d skills, want 5", len(rep.Skills))
	}
	for _, s := range rep.Skills {
		if !s.Verified {
			t.Errorf("TS SkillsClient could not verify %s", s.URI)
		}
	}
}
