package catalog_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/sigfile"
	"github.com/skillport/skillport/internal/skilltest"
)

// TestWatchPicksUpSignatures: a bundle written into the signature folder
// (a dot-folder the walk skips) while watching is a new snapshot, whether
// the folder existed when the watch began or was created after.
func TestWatchPicksUpSignatures(t *testing.T) {
	for _, existing := range []bool{true, false} {
		dir := t.TempDir()
		skilltest.WriteFile(t, filepath.Join(dir, "one", "SKILL.md"), skillFile("one"))
		bundle := filepath.Join(dir, filepath.FromSlash(sigfile.Path("one")))
		if existing {
			skilltest.WriteFile(t, bundle, `{"v":1}`)
		}
		c, err := catalog.OpenDir(dir, &catalog.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		w := startWatch(t, c, &catalog.WatchOptions{Debounce: 30 * time.Millisecond, MaxDelay: 300 * time.Millisecond, Logger: quiet})
		signed := func(want string) func(*catalog.Catalog) bool {
			return func(c *catalog.Catalog) bool {
				s := c.Skill("skill://one/SKILL.md")
				return s != nil && string(s.Signature) == want
			}
		}
		skilltest.WriteFile(t, bundle, `{"v":2}`)
		w.waitFor(t, "the new bundle is attached", signed(`{"v":2}`))
		skilltest.WriteFile(t, bundle, `{"v":3}`)
		w.waitFor(t, "the changed bundle is attached", signed(`{"v":3}`))
	}
}
