//go:build unix

package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/internal/gittest"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/skilltest"
	"github.com/skillport/skillport/internal/web"
	"github.com/skillport/skillport/wire"
)

// TestArchiveKeepsModes (#27 point 7; Unix, where files have an execute
// bit): the archive of a skill served from a directory or a git commit
// gives each file the mode the source recorded, not pull's "#!" rule: an
// executable script without "#!" stays 0755 and a file starting with "#!"
// that is not executable stays 0644. The discovery document's digest is
// that of the archive served.
func TestArchiveKeepsModes(t *testing.T) {
	dir := skilltest.WriteTree(t, map[string]string{
		"tool/SKILL.md":    "---\nname: tool\ndescription: Runs a tool.\n---\nRun ./scripts/run.\n",
		"tool/scripts/run": "echo no shebang\n",
		"tool/notes.sh":    "#!/bin/sh\necho an example, not to run\n",
	})
	for p, m := range map[string]os.FileMode{"tool/scripts/run": 0o750, "tool/notes.sh": 0o600} {
		if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(p)), m); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int64{"SKILL.md": 0o644, "scripts/run": 0o755, "notes.sh": 0o644}

	dirCat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dirCat.Close() })
	spec, err := gitsource.ParseSpec("git+file://" + gittest.BareRepoOf(t, dir) + "@main")
	if err != nil {
		t.Fatal(err)
	}
	gs, err := gitsource.Open(context.Background(), spec, &gitsource.Options{CacheDir: t.TempDir(), Credentials: &gitsource.Credentials{}, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*catalog.Catalog{"directory": dirCat, "git": gs.Catalog()} {
		t.Run(name, func(t *testing.T) {
			ts := serveWeb(t, published.NewCatalogSource(c), nil)
			resp, body := get(t, ts.URL+"/archive/tool.tar.gz")
			if resp.StatusCode != 200 {
				t.Fatalf("/archive/tool.tar.gz: %s %s", resp.Status, body)
			}
			files, modes := untarModes(t, []byte(body))
			if len(files) != len(want) {
				t.Errorf("archive holds %v, want %v", modes, want)
			}
			for name, m := range want {
				if modes[name] != m {
					t.Errorf("%s: mode %o, want %o (as on disk / in the tree)", name, modes[name], m)
				}
			}
			var d wire.Discovery
			if _, doc := get(t, ts.URL+web.WellKnownPath); json.Unmarshal([]byte(doc), &d) != nil || len(d.Skills) != 1 {
				t.Fatalf("discovery document: %s", doc)
			}
			if sum := sha256.Sum256([]byte(body)); d.Skills[0].Digest != "sha256:"+hex.EncodeToString(sum[:]) {
				t.Errorf("discovery digest %s is not the archive's", d.Skills[0].Digest)
			}
		})
	}
}
