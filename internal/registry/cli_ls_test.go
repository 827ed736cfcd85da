package registry_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIYankLsDiffJSON: the registry CLI's answers agree with what it
// does (issue 27.9). A yank of the current version after a rollback
// falls back to the good later version and says so; the yank of the
// last version says the skill is no longer served. registry ls lists the
// skills with the version each serves (tab-separated when piped, --json);
// versions, log and diff have --json; diff shows the text diff.
func TestCLIYankLsDiffJSON(t *testing.T) {
	dsn := newDB(t)
	dir := t.TempDir()
	md := filepath.Join(dir, "notes", "SKILL.md")
	os.MkdirAll(filepath.Dir(md), 0o755)
	write := func(body string) {
		if err := os.WriteFile(md, []byte("---\nname: notes\ndescription: Take notes.\n---\n\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("one\ntwo\nthree\n")
	skillport(t, 0, "publish", "--registry", dsn, "--prefix", "acme", dir)
	write("one\nTWO\nthree\n")
	skillport(t, 0, "publish", "--registry", dsn, "--prefix", "acme", dir)

	out := skillport(t, 0, "registry", "diff", "--registry", dsn, "acme/notes", "1", "2")
	for _, want := range []string{"~ SKILL.md (", "@@", "-two", "+TWO", " one"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	var changes []struct{ Path, Change, Diff string }
	if err := json.Unmarshal([]byte(skillport(t, 0, "registry", "diff", "--json", "--registry", dsn, "acme/notes", "1", "2")), &changes); err != nil || len(changes) != 1 || !strings.Contains(changes[0].Diff, "+TWO") {
		t.Errorf("diff --json: %v %+v", err, changes)
	}

	skillport(t, 0, "registry", "rollback", "--registry", dsn, "acme/notes", "1")
	out = skillport(t, 0, "registry", "yank", "--registry", dsn, "acme/notes", "1")
	if !strings.Contains(out, "acme/notes serves version 2") {
		t.Errorf("yank of the rolled-back version 1 does not fall back to the good version 2:\n%s", out)
	}
	out = skillport(t, 0, "registry", "ls", "--registry", dsn)
	if !strings.Contains(out, "acme/notes\t2\t2\t") {
		t.Errorf("registry ls, piped:\n%s", out)
	}
	out = skillport(t, 0, "registry", "yank", "--registry", dsn, "acme/notes", "2")
	if !strings.Contains(out, "acme/notes is no longer served") {
		t.Errorf("yank of the last version does not say the skill stops being served:\n%s", out)
	}
	var ls []struct {
		Path              string
		Current, Versions int
	}
	if err := json.Unmarshal([]byte(skillport(t, 0, "registry", "ls", "--json", "--registry", dsn, "acme")), &ls); err != nil || len(ls) != 1 || ls[0].Path != "acme/notes" || ls[0].Current != 0 || ls[0].Versions != 2 {
		t.Errorf("registry ls --json: %v %+v", err, ls)
	}
	var vs []struct {
		Version     int
		Current     bool
		Yanked      bool
		YankedBy    string
		PublishedBy string
	}
	if err := json.Unmarshal([]byte(skillport(t, 0, "registry", "versions", "--json", "--registry", dsn, "acme/notes")), &vs); err != nil || len(vs) != 2 || !vs[0].Yanked || vs[1].YankedBy != "ci" || vs[0].PublishedBy != "ci" {
		t.Errorf("registry versions --json: %v %+v", err, vs)
	}
	var evs []struct{ Action, Path string }
	if err := json.Unmarshal([]byte(skillport(t, 0, "registry", "log", "--json", "--registry", dsn, "acme/notes")), &evs); err != nil || len(evs) != 5 || evs[4].Action != "yank" {
		t.Errorf("registry log --json: %v %+v", err, evs)
	}
}

// TestCLIDiffBounded: registry diff never compares a file larger than
// registry.MaxDiffFileBytes (it is summarised) and cuts a diff at
// registry.MaxDiffBytes, saying so.
func TestCLIDiffBounded(t *testing.T) {
	dsn := newDB(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "big"), 0o755)
	os.WriteFile(filepath.Join(dir, "big", "SKILL.md"), []byte("---\nname: big\ndescription: Big files.\n---\n\nbody\n"), 0o644)
	lines := func(n int, word string) []byte {
		var b strings.Builder
		for i := range n {
			b.WriteString(word + " line " + strings.Repeat("x", 20) + string(rune('a'+i%26)) + "\n")
		}
		return []byte(b.String())
	}
	huge, mid := filepath.Join(dir, "big", "huge.md"), filepath.Join(dir, "big", "mid.md")
	os.WriteFile(huge, lines(9000, "old"), 0o644) // ~300 KiB: over the limit
	os.WriteFile(mid, lines(5000, "old"), 0o644)  // ~170 KiB: compared, cut
	skillport(t, 0, "publish", "--registry", dsn, dir)
	os.WriteFile(huge, lines(9000, "new"), 0o644)
	os.WriteFile(mid, lines(5000, "new"), 0o644)
	skillport(t, 0, "publish", "--registry", dsn, dir)
	out := skillport(t, 0, "registry", "diff", "--registry", dsn, "big", "1", "2")
	if len(out) > 80<<10 {
		t.Errorf("diff printed %d bytes, want at most about %d", len(out), 64<<10)
	}
	hugeAt, midAt := strings.Index(out, "~ huge.md ("), strings.Index(out, "~ mid.md (")
	if hugeAt < 0 || midAt < hugeAt || strings.Contains(out[hugeAt:midAt], "@@") {
		t.Errorf("huge.md is not summarised:\n%.400s", out)
	}
	if !strings.Contains(out, "~ mid.md (") || !strings.Contains(out, "diff cut at 65536 bytes") || !strings.Contains(out, "-old line") {
		t.Errorf("mid.md's diff is not shown and cut:\n%.400s", out)
	}
}
