package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Check is one check of a conformance scenario, as the suite records it in
// its checks.json.
type Check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, SKIPPED, INFO
	ErrorMessage string `json:"errorMessage"`
	Details      struct {
		// Untestable marks a check the suite could not exercise against
		// this server, such as one that needs the suite's own diagnostic
		// tools.
		Untestable bool `json:"untestable"`
	} `json:"details"`
}

// Key names the check for allowlists: its name, which unlike its id is
// unique within a scenario.
func (c Check) Key() string { return c.Name }

// ConformanceServer runs one server scenario of the conformance suite
// against url and returns its checks. It fails the test if the suite did
// not run or recorded nothing; judging the checks is the caller's.
func ConformanceServer(t testing.TB, url, scenario string) []Check {
	t.Helper()
	out := t.TempDir()
	res, err := Run(context.Background(), Command{
		Args: append(Conformance(t), "server", "--url", url, "--scenario", scenario, "-o", out),
		Dir:  t.TempDir(),
		Env:  Env(t),
	})
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if len(files) != 1 {
		t.Fatalf("conformance %s against %s recorded no checks.json (%v):\n%s%s", scenario, url, err, res.Stdout, res.Stderr)
	}
	data, rerr := os.ReadFile(files[0])
	var checks []Check
	if rerr != nil || json.Unmarshal(data, &checks) != nil || len(checks) == 0 {
		t.Fatalf("conformance %s: unreadable or empty %s: %v", scenario, files[0], rerr)
	}
	return checks
}

// JudgeChecks returns one line per check that neither passed nor is listed
// in notApplicable (check name -> why), and one per listed check that
// passed or is missing (so that a stale list is noticed). A listed check
// must have been skipped, failed as untestable, or only warned: a listed
// check that fails outright still fails.
func JudgeChecks(checks []Check, notApplicable map[string]string) []string {
	var bad []string
	seen := map[string]bool{}
	for _, c := range checks {
		_, listed := notApplicable[c.Key()]
		seen[c.Key()] = true
		switch {
		case c.Status == "SUCCESS" || c.Status == "INFO":
			if listed {
				bad = append(bad, fmt.Sprintf("%s (%s) passed but is listed as not applicable: remove it from the list", c.Key(), c.ID))
			}
		case listed && (c.Status == "SKIPPED" || c.Status == "WARNING" || c.Details.Untestable):
		default:
			bad = append(bad, fmt.Sprintf("%s %s (%s): %s", c.Status, c.Key(), c.ID, strings.TrimSpace(c.ErrorMessage)))
		}
	}
	for k := range notApplicable {
		if !seen[k] {
			bad = append(bad, fmt.Sprintf("%s is listed as not applicable but the scenario has no such check", k))
		}
	}
	sort.Strings(bad)
	return bad
}
