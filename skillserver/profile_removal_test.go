package skillserver_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// removableProfiles are the build tags that leave one compatibility profile
// out, as deleting its files would (docs/profiles.md, "Removing a
// profile"), and the last one leaves them all out at once.
var removableProfiles = []string{
	"skillport_no_index",   // skillserver/profile_index.go, host/profile_index.go
	"skillport_no_sep2076", // skillserver/profile_sep2076.go
	"skillport_no_seed001", // skillserver/profile_seed001.go (and internal/sandbox's only server use)
	"skillport_no_legacy",  // host/profile_legacy.go, host/legacy.go
	"skillport_no_index,skillport_no_sep2076,skillport_no_seed001,skillport_no_legacy",
}

// TestProfilesRemovable builds the server, the host, their tests and the
// skillport command without each compatibility profile, and runs the
// extension's golden wire tests, the core-alone tests and the thin read
// path's tests (which the profiles' hook steers) there: a profile
// is removed by deleting the files its tag leaves out, and nothing else
// (its Options field and serve flag aside) names it. One build per tag; the
// go command's caches make a repeat with unchanged files cheap.
func TestProfilesRemovable(t *testing.T) {
	root := moduleRoot(t)
	for _, tags := range removableProfiles {
		t.Run(tags, func(t *testing.T) {
			goCmd(t, root, "vet", "-tags", tags, "./host/e2e", "./cmd/skillport")
			goCmd(t, root, "test", "-tags", tags, "-run", "^(TestGolden|TestCoreWithoutProfiles|TestFast.*)$", "./skillserver", "./host")
		})
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || len(strings.TrimSpace(string(out))) == 0 {
		t.Fatalf("go env GOMOD: %v (the go command must be on PATH to build without a profile)", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
