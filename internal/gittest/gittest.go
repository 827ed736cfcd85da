// Package gittest drives the git binary for tests that need real git
// repositories and servers. The git binary (Debian package "git") must be
// installed: a test without it fails saying so.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Env is the environment of a git command isolated from the user's
// configuration, with a fixed author.
func Env(home string) []string {
	return append(os.Environ(),
		"HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_TERMINAL_PROMPT=0")
}

// Run runs git in dir and fails the test with git's output if it fails.
func Run(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, Env(dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v (the git binary is needed: apt-get install git): %v\n%s", args, err, out)
	}
}

// BareRepoOf commits the files under dir on branch main of a new bare
// repository, tags the commit v1, and returns the repository's path.
func BareRepoOf(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	work, bare := t.TempDir(), filepath.Join(t.TempDir(), "skills.git")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"--work-tree", abs, "add", "-A", "."},
		{"commit", "-q", "-m", "skills"},
		{"tag", "v1"},
		{"clone", "-q", "--bare", ".", bare},
	} {
		Run(t, work, args...)
	}
	return bare
}
