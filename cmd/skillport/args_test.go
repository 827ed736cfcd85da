package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/skillport/skillport/host"
)

// TestPullSkillTakesWhatLsShows: pull --skill takes the path, the name ls
// shows, or ORIGIN:NAME; a typo is answered with the closest name; and ls
// shows the path it also takes.
func TestPullSkillTakesWhatLsShows(t *testing.T) {
	for _, arg := range []string{"refunds", "acme/billing/refunds", "docs:refunds"} {
		dir := t.TempDir()
		f := flags()
		f.only = []string{arg}
		var out, errOut bytes.Buffer
		if err := runPull(context.Background(), &out, &errOut, f, []host.Origin{examplesOrigin(t)}, dir, false, false); err != nil {
			t.Errorf("pull --skill %s: %v\n%s%s", arg, err, out.String(), errOut.String())
			continue
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "refunds" {
			t.Errorf("pull --skill %s wrote %v", arg, ents)
		}
	}
	f := flags()
	f.only = []string{"refund"}
	var out, errOut bytes.Buffer
	err := runPull(context.Background(), &out, &errOut, f, []host.Origin{examplesOrigin(t)}, t.TempDir(), false, false)
	if exitCode(err) != 1 || !strings.Contains(errOut.String(), "--skill refund: no such skill; did you mean refunds?") {
		t.Errorf("pull --skill refund: %v\n%s", err, errOut.String())
	}
	piped := lsOf(t, 0, examplesOrigin(t))
	if !strings.Contains(piped, "\tverified-on-load\tacme/billing/refunds\n") {
		t.Errorf("ls shows no path:\n%s", piped)
	}
	if wide := lsOf(t, 140, examplesOrigin(t)); !strings.Contains(wide, "PATH") || !strings.Contains(wide, "acme/billing/refunds") {
		t.Errorf("ls on a wide terminal shows no PATH column:\n%s", wide)
	}
}

// TestLoadArguments: load takes NAME then the server, as ls and pull take
// the server; the swapped order is named as such; a refusal for want of a
// terminal names --yes and --policy.
func TestLoadArguments(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ep, _, _ := examplesEndpoint(t)
	ts := httptest.NewServer(ep)
	defer ts.Close()
	_, errOut, code := runCLI(t, "load", ts.URL+"/mcp", "refunds")
	if code != 2 || !strings.Contains(errOut, "the skill name comes first, then the server: skillport load refunds "+ts.URL+"/mcp") {
		t.Errorf("swapped: exit %d\n%s", code, errOut)
	}
	out, errOut, code := runCLI(t, "load", "refunds", ts.URL+"/mcp", "--yes")
	if code != 0 || !strings.Contains(out, "refund") {
		t.Errorf("load NAME URL: exit %d\n%s%s", code, out, errOut)
	}
	var o, e bytes.Buffer
	err := runLoad(context.Background(), &o, &e, flags(), []host.Origin{examplesOrigin(t)}, "refunds", "", false)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "pass --yes to approve this load, or --policy FILE") {
		t.Errorf("load without a terminal: %v", err)
	}
}

// TestLocalArgumentsAgree: a folder given where a server is expected names
// --skills-dir; an invalid prefix or label is said as such, not as a file
// that does not exist; serve takes a SKILL.md as validate does.
func TestLocalArgumentsAgree(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", "../../examples/skills"}, "../../examples/skills is a local folder, not a server; give it with --skills-dir ../../examples/skills"},
		{[]string{"ls", "--skills-dir", "Team=../../examples/skills"}, `--skills-dir Team=../../examples/skills: origin label "Team" must be`},
		{[]string{"serve", "Team=../../examples/skills"}, `the prefix "Team" must be lowercase`},
		{[]string{"serve", "Team=git+https://127.0.0.1:1/x.git"}, `the prefix "Team" must be lowercase`},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "no such file") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	set, err := openSources(context.Background(), []string{"../../examples/skills/code-review/SKILL.md"}, sourceOptions{log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("serve dir/SKILL.md: %v", err)
	}
	if n := set.parts[0].src.Catalog().Stats().Skills; n != 1 {
		t.Errorf("serve dir/SKILL.md serves %d skills", n)
	}
}

// TestFlagErrorsSayTheFix: a mistyped flag gets "did you mean", a duration
// without a unit the value with one.
func TestFlagErrorsSayTheFix(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", "--skils-dir", "x"}, "unknown flag: --skils-dir; did you mean --skills-dir? (see skillport ls --help)"},
		{[]string{"ls", "--timeout", "3", "http://127.0.0.1:1/mcp"}, "--timeout 3: a duration needs a unit: 3s"},
		{[]string{"validate", "--eror-only", "x"}, "did you mean --errors-only?"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestAuthStatusWithoutTokensSaysSo: not an empty screen.
func TestAuthStatusWithoutTokensSaysSo(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	out, errOut, code := runCLI(t, "auth", "status")
	if code != 0 || out != "" || !strings.Contains(errOut, "not signed in to any server; skillport auth login URL signs in to one") {
		t.Errorf("auth status: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
