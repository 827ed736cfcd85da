package main

import (
	"bytes"
	"context"
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
