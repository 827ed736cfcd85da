package registry_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skillport/skillport/internal/registry"
)

// TestYankRollbackRace runs `registry yank V` and `registry rollback V`
// of the same version at once, pair after pair: whichever wins, a yanked
// version is never left current (served). Both deciding under the skill
// row's lock is what makes it so; before, about 4 pairs in 10 left the
// yanked version current with both commands succeeding.
func TestYankRollbackRace(t *testing.T) {
	const pairs = 100
	dsn := newDB(t)
	ctx := context.Background()
	admin, yanker, roller := connect(t, dsn), connect(t, dsn), connect(t, dsn)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "race"), 0o755)
	for v := 1; v <= pairs+1; v++ {
		os.WriteFile(filepath.Join(dir, "race", "SKILL.md"), fmt.Appendf(nil, "---\nname: race\ndescription: Version %d of a raced skill.\n---\n", v), 0o644)
		publish(t, admin, openCat(t, dir, "ns"), nil)
	}
	const path = "ns/race"
	for v := 1; v <= pairs; v++ {
		var wg sync.WaitGroup
		var yankErr, rollErr error
		wg.Add(2)
		go func() { defer wg.Done(); yankErr = registry.Yank(ctx, yanker, path, v, "y", "raced") }()
		go func() { defer wg.Done(); rollErr = registry.Rollback(ctx, roller, path, v, "r") }()
		wg.Wait()
		if yankErr != nil {
			t.Fatalf("pair %d: yank: %v", v, yankErr)
		}
		var current *int
		var yanked bool
		if err := admin.QueryRow(ctx, `SELECT s.current, coalesce(v.yanked_at IS NOT NULL, false) FROM skills s
			LEFT JOIN versions v ON v.path = s.path AND v.version = s.current WHERE s.path = $1`, path).Scan(&current, &yanked); err != nil {
			t.Fatal(err)
		}
		if yanked {
			t.Errorf("pair %d: version %d is yanked and current (rollback: %v)", v, *current, rollErr)
		}
		// Serve the newest version again before the next pair.
		if err := registry.Rollback(ctx, admin, path, pairs+1, "t"); err != nil {
			t.Fatal(err)
		}
	}
}
