package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/gittest"
)

// examplesRepo commits examples/skills to a new bare repository and
// returns its git+file:// source.
func examplesRepo(t *testing.T) string {
	t.Helper()
	bare := gittest.BareRepoOf(t, "../../examples/skills")
	// Mirrors go to the user cache directory: keep them in the test's.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	return "git+file://" + bare + "@v1"
}

// TestVerifyPullLsGitSource checks a repository's skills with the host
// commands before serving them, from the command line and from a config.
func TestVerifyPullLsGitSource(t *testing.T) {
	src := examplesRepo(t)
	origins := []host.Origin{{Label: "team", Git: src}}
	var out, errOut bytes.Buffer
	if err := runVerify(context.Background(), &out, &errOut, flags(), origins, false); err != nil {
		t.Fatalf("verify: %v\n%s%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "5 skills verified, 0 failed") {
		t.Errorf("verify:\n%s", out.String())
	}
	out.Reset()
	to := t.TempDir()
	if err := runPull(context.Background(), &out, &errOut, flags(), origins, to, false, false); err != nil {
		t.Fatalf("pull: %v\n%s%s", err, out.String(), errOut.String())
	}
	if _, err := os.Stat(filepath.Join(to, "pdf-processing", "SKILL.md")); err != nil {
		t.Errorf("pull did not write pdf-processing: %v\n%s", err, out.String())
	}

	cfg := filepath.Join(t.TempDir(), "skillport.json")
	if err := os.WriteFile(cfg, []byte(`{"skillDirs": [{"label": "team", "path": "`+src+`"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f := flags()
	f.config, f.noLocal = cfg, true
	cfgOrigins, _, err := host.LoadConfig(cfg)
	if err != nil || len(cfgOrigins) != 1 || cfgOrigins[0].Git != src {
		t.Fatalf("config origins %+v, %v", cfgOrigins, err)
	}
	out.Reset()
	if err := runLs(context.Background(), &out, &errOut, f, cfgOrigins, false); err != nil {
		t.Fatalf("ls: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "team") || !strings.Contains(out.String(), "pdf-processing") {
		t.Errorf("ls:\n%s", out.String())
	}

	// A git source that does not parse is a usage error naming the problem.
	bad := []host.Origin{{Label: "team", Git: "git+ftp://example.com/x.git"}}
	out.Reset()
	if err := runVerify(context.Background(), &out, &errOut, flags(), bad, false); err == nil || !strings.Contains(errOut.String(), "ftp") {
		t.Errorf("verify of a bad source: %v\n%s", err, out.String())
	}
}

// TestServeGitMaxFetch checks that --git-max-fetch bounds what a fetch
// of a git source may write, and refuses a bound that is not positive.
func TestServeGitMaxFetch(t *testing.T) {
	src := examplesRepo(t)
	_, errOut, code := runCLI(t, "serve", "--git-max-fetch", "1000", src)
	if code != 1 || !strings.Contains(errOut, "more than 1000 bytes") {
		t.Errorf("serve --git-max-fetch 1000: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCLI(t, "serve", "--git-max-fetch", "0", src)
	if code != 2 || !strings.Contains(errOut, "--git-max-fetch") {
		t.Errorf("serve --git-max-fetch 0: exit %d\n%s", code, errOut)
	}
}
