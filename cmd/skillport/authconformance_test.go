package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/peers"
)

// conformanceCIMD is the client id URL the suite's auth/basic-cimd
// scenario expects a client to use (the suite does not pass it).
const conformanceCIMD = "https://conformance-test.local/client-metadata.json"

// authNotApplicable are the conformance suite's auth/* client scenarios
// that `skillport ls` does not pass, and why; README "Signing in" lists
// them. The test fails if one starts passing or leaves the suite.
var authNotApplicable = map[string]string{
	"auth/scope-step-up":                    "the server asks for a second scope on a tools call; ls lists skills and calls no tool, so it is never challenged twice",
	"auth/authorization-server-migration":   "the server moves to a new authorization server after the first authorized request; ls makes only that one (a later command re-registers with the new server)",
	"auth/client-credentials-jwt":           "client authentication with a private key JWT (RFC 7523) is not supported; machines authenticate with a client secret",
	"auth/enterprise-managed-authorization": "enterprise-managed authorization (ID-JAG token exchange with the organization's identity provider) is not supported",
	"auth/dpop":                             "DPoP-bound tokens (RFC 9449) are not supported; skillport sends bearer tokens",
	"auth/dpop-nonce":                       "DPoP-bound tokens (RFC 9449) are not supported; skillport sends bearer tokens",
	"auth/wif-jwt-bearer":                   "workload identity federation (the JWT bearer grant with a platform-issued token) is not supported",
}

// conformanceClient is `skillport ls` as the suite runs it: the suite's
// context (MCP_CONFORMANCE_CONTEXT: a pre-registered client id and secret)
// becomes the flags a user would give, and --login lets it sign in, except
// in the client credentials scenarios (a machine). The browser is this
// binary too ($BROWSER): it opens the authorization URL and follows the
// redirects to ls's loopback listener, as the suite's authorization
// server approves at once.
func conformanceClient() int {
	args := os.Args[1:]
	if len(args) == 1 && strings.HasPrefix(args[0], "http") {
		c := &http.Client{Timeout: 30 * time.Second}
		resp, err := c.Get(args[0])
		if err != nil {
			return 1
		}
		resp.Body.Close()
		return 0
	}
	url := args[len(args)-1]
	args = args[:len(args)-1]
	var cc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &cc)
	args = append(args, "--client-metadata-url", conformanceCIMD)
	if cc.ClientID != "" {
		args = append(args, "--client-id", cc.ClientID)
	}
	if cc.ClientSecret != "" {
		os.Setenv("CONFORMANCE_CLIENT_SECRET", cc.ClientSecret)
		args = append(args, "--client-secret-env", "CONFORMANCE_CLIENT_SECRET")
	}
	if !strings.HasPrefix(os.Getenv("MCP_CONFORMANCE_SCENARIO"), "auth/client-credentials") {
		args = append(args, "--login")
	}
	return run(append(args, url))
}

// TestConformanceAuthClientScenarios runs every auth/* client scenario of
// the official conformance suite against `skillport ls`.
func TestConformanceAuthClientScenarios(t *testing.T) {
	res, err := peers.Run(context.Background(), peers.Command{Args: append(peers.Conformance(t), "list"), Env: peers.Env(t)})
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, res.Stderr)
	}
	scenarios := regexp.MustCompile(`(?m)^\s+- (auth/[a-z0-9-]+)`).FindAllStringSubmatch(string(res.Stdout)+string(res.Stderr), -1)
	if len(scenarios) < 20 {
		t.Fatalf("conformance list names %d auth scenarios:\n%s", len(scenarios), res.Stdout)
	}
	seen := map[string]bool{}
	for _, m := range scenarios {
		scenario := m[1]
		seen[scenario] = true
		t.Run(strings.TrimPrefix(scenario, "auth/"), func(t *testing.T) {
			env := append(peers.Env(t), "SKILLPORT_AS_CLI=conformance", "BROWSER="+os.Args[0], "XDG_CONFIG_HOME="+t.TempDir())
			args := append(peers.Conformance(t), "client", "--scenario", scenario, "--command", peers.ShellJoin(os.Args[0], "ls"), "--timeout", "30000")
			res, err := peers.Run(context.Background(), peers.Command{Args: args, Env: env, Timeout: 2 * time.Minute})
			why, listed := authNotApplicable[scenario]
			switch {
			case listed && err == nil:
				t.Errorf("%s passes but is listed as not applicable (%s): remove it from authNotApplicable and the README", scenario, why)
			case !listed && err != nil:
				t.Errorf("%s: %v\n%s", scenario, err, failures(string(res.Stdout)+string(res.Stderr)))
			}
		})
	}
	var stale []string
	for s := range authNotApplicable {
		if !seen[s] {
			stale = append(stale, s)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("listed as not applicable but not in the suite: %v", stale)
	}
}

// failures keeps the suite's FAILURE and WARNING lines and the client's
// output, without colour codes.
func failures(out string) string {
	out = regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(out, "")
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "FAILURE") || strings.Contains(l, "WARNING") || strings.Contains(l, "skillport") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
