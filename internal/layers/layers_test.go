package layers

import (
	"go/build"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/skillport/skillport/"

// rank orders the packages: a package may import only packages of a lower
// rank, so an arrow pointing back up, or a cycle, fails the test.
var rank = map[string]int{
	"internal/jsonobj":  0,
	"internal/jsonc":    0,
	"internal/termsafe": 0,
	"internal/sdklog":   0,
	"internal/stdio":    0,
	"internal/cputime":  0,
	"internal/mcphttp":  0,
	"internal/paging":   0,
	"internal/budget":   0,
	"internal/suggest":  0,
	"internal/filemode": 0,
	"host/sanitize":     0,
	"skill":             1,
	"sandbox":           1,
	"host/skilluri":     2,
	"internal/install":  2,
	"catalog":           2,
	"wire":              2,
	"host/cache":        3,
	"host/approval":     3,
	"host/oauth":        3,
	"server":            3,
	"gitsource":         3,
	"skillclient":       3,
	"skills":            4,
	"access":            4,
	"endpoint":          5,
	"registry":          4,
	"web":               4,
	"gitorigin":         4,
	"host":              4,
	"gateway":           5,
	"siteorigin":        5,
	"cmd/skillport":     6,
}

// forbidden are imports the ranks allow but the design does not: the
// consuming side never depends on the publishing side.
var forbidden = map[string][]string{
	"skillclient": {"catalog", "server", "skills"},
	"wire":        {"catalog"},
	"host":        {"server", "skills"},
}

func TestImportsFollowTheLayers(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	for pkg, r := range rank {
		p, err := build.ImportDir(filepath.Join(root, filepath.FromSlash(pkg)), 0)
		if err != nil {
			t.Errorf("%s: %v", pkg, err)
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			dr, known := rank[dep]
			if !known {
				if !strings.HasSuffix(dep, "test") && dep != "internal/peers" {
					t.Errorf("%s imports %s, which has no rank yet; add it to rank", pkg, dep)
				}
				continue
			}
			if dr >= r {
				t.Errorf("%s (rank %d) imports %s (rank %d): imports must point down the layers", pkg, r, dep, dr)
			}
			for _, f := range forbidden[pkg] {
				if dep == f {
					t.Errorf("%s imports %s: the consuming side must not depend on the publishing side", pkg, dep)
				}
			}
		}
	}
}
