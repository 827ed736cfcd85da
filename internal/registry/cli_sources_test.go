package registry_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/gittest"
)

// TestCLIPublishSources publishes a directory and a git source in one
// publish, each under its own PREFIX=, and refuses sources that collide
// without publishing any of them.
func TestCLIPublishSources(t *testing.T) {
	dsn := newDB(t)
	repo := gittest.BareRepoOf(t, examples)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := copyTree(t, examples)
	out := skillport(t, 0, "publish", "--registry", dsn, "acme="+dir, "team=git+file://"+repo)
	for _, want := range []string{`published "acme": 5 added`, `published "team": 5 added`, "+ team/code-review v1"} {
		if !strings.Contains(out, want) {
			t.Errorf("publish of two sources lacks %q:\n%s", want, out)
		}
	}
	head, err := exec.Command("git", "--git-dir", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if out := skillport(t, 0, "registry", "versions", "--registry", dsn, "team/code-review"); !strings.Contains(out, strings.TrimSpace(string(head))) {
		t.Errorf("the git source's versions do not record commit %s:\n%s", head, out)
	}

	// The same skills twice in one namespace: refused naming both sources;
	// the directory's namespace is not published either.
	out = skillport(t, 1, "publish", "--registry", dsn, "other="+dir, "other=git+file://"+repo)
	if !strings.Contains(out, "other/acme/billing/refunds is in both "+dir+" and git+file://"+repo) {
		t.Errorf("colliding sources:\n%s", out)
	}
	out = skillport(t, 1, "publish", "--registry", dsn, "fresh="+dir, "fresh/nested=git+file://"+repo)
	if !strings.Contains(out, "overlaps") || !strings.Contains(out, dir) || !strings.Contains(out, repo) {
		t.Errorf("overlapping sources:\n%s", out)
	}
	for _, p := range []string{"other/code-review", "fresh/code-review"} {
		skillport(t, 1, "registry", "versions", "--registry", dsn, p)
	}
	skillport(t, 2, "publish", "--registry", dsn, "--prefix", "acme", dir, "git+file://"+repo)
}
