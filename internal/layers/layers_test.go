package layers

import (
	"go/build"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/skillport/skillport/"

// rank orders the packages: a package may import only packages of a lower
// rank, so an arrow pointing back up, or a cycle, fails the test.
var rank = map[string]int{
	"internal/jsonobj":    0,
	"internal/gitspec":    0,
	"internal/ociref":     0,
	"internal/poll":       0,
	"internal/jsonc":      0,
	"internal/termsafe":   0,
	"internal/sdklog":     0,
	"internal/stdio":      0,
	"internal/cputime":    0,
	"internal/mcphttp":    0,
	"internal/paging":     0,
	"internal/budget":     0,
	"internal/suggest":    0,
	"internal/filemode":   0,
	"internal/sanitize":   0,
	"internal/sigfile":    0,
	"internal/scan":       0,
	"internal/signature":  1,
	"skill":               1,
	"internal/sandbox":    1,
	"internal/skilluri":   2,
	"catalog":             2,
	"wire":                2,
	"internal/cache":      3,
	"host/approval":       3,
	"internal/oauth":      3,
	"internal/published":  3,
	"skillserver":         4,
	"internal/gitsource":  3,
	"internal/ocisource":  3,
	"skillclient":         3,
	"skills":              5,
	"internal/access":     5,
	"internal/endpoint":   6,
	"internal/registry":   5,
	"internal/web":        5,
	"internal/gitorigin":  5,
	"host":                4,
	"internal/gateway":    6,
	"internal/regapi":     6,
	"internal/siteorigin": 6,
	"cmd/skillport":       7,
	"internal/install":    2,
}

// forbidden are imports the ranks allow but the design does not: the
// consuming side never depends on the publishing side.
var forbidden = map[string][]string{
	"skillclient": {"catalog", "skillserver", "skills"},
	"wire":        {"catalog"},
	"host":        {"skillserver", "skills"},
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

// public is the whole API a Go user imports: every other package is
// under internal/ (product components: HTTP composition, web, gateway,
// access, sandbox, sources other than a directory, the registry) or a
// command. A new public package is a decision, made here and in the
// README's "The Go library", not a side effect of a new folder.
var public = []string{
	"catalog",       // a tree of skills → an immutable, digested snapshot
	"host",          // discover, verify, approve and load skills for a model
	"host/approval", // who says yes to a skill, and what was approved
	"skill",         // the SKILL.md format: parse and validate
	"skillclient",   // read and verify skills over one MCP session
	"skills",        // the shortest way: serve a folder or an fs.FS
	"skillserver",   // the extension's methods on any go-sdk mcp.Server
	"wire",          // the extension's messages as Go types
}

func TestPublicSurface(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{if .GoFiles}}{{.ImportPath}}{{end}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var got []string
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(p, module)
		if strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/") || strings.HasPrefix(rel, "cmd/") {
			continue
		}
		got = append(got, rel)
	}
	if !slices.Equal(got, public) {
		t.Errorf("public packages are %q, want %q: put product code under internal/, or make the new package public on purpose here and in the README", got, public)
	}
	if len(public) > 8 {
		t.Errorf("%d public packages; a Go user should need at most 8", len(public))
	}
}

// TestHostBuildsWithoutGit keeps git out of every host user's build: a
// host parses a git source (internal/gitspec) and hands it to whatever
// fetches it, but does not link a git implementation itself.
func TestHostBuildsWithoutGit(t *testing.T) {
	for _, pkg := range []string{"host", "skillclient"} {
		out, err := exec.Command("go", "list", "-deps", module+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.Contains(dep, "go-git") || strings.Contains(dep, "jackc/pgx") || strings.Contains(dep, "oras.land") {
				t.Errorf("%s depends on %s: keep git, OCI registry and database code out of the consuming side's build", pkg, dep)
			}
		}
	}
}
