package registry_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIErrorsOnce: publish prints each invalid skill once, and a
// database that cannot be reached or does not exist is one line with the
// cause and the fix, never pgx's one line per address tried (issue 27.14).
func TestCLIErrorsOnce(t *testing.T) {
	dsn := newDB(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "bad"), 0o755)
	os.WriteFile(filepath.Join(dir, "bad", "SKILL.md"), []byte("---\nname: bad\n---\nbody\n"), 0o644)
	out := skillport(t, 1, "publish", "--registry", dsn, dir)
	if n := strings.Count(out, "description: missing"); n != 1 {
		t.Errorf("the invalid skill is reported %d times, want once:\n%s", n, out)
	}
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://nobody@127.0.0.1:1/none", "connection refused; is PostgreSQL running there"},
		{strings.Replace(dsn, "/t", "/nosuchdb", 1), "does not exist; create the database"},
	} {
		out := strings.TrimSpace(skillport(t, 1, "registry", "ls", "--registry", tc.dsn))
		if strings.Contains(out, "\n") || !strings.Contains(out, tc.want) || !strings.Contains(out, "cannot connect to postgres://") {
			t.Errorf("%s: want one line saying %q:\n%s", tc.dsn, tc.want, out)
		}
	}
}
