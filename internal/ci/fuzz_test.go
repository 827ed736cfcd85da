package ci

import (
	"go/ast"
	"go/build"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fuzzTarget is a Fuzz function of the repository's tests.
type fuzzTarget struct {
	dir, name string // dir slash-separated, relative to the root
	seeds     int    // f.Add calls written in its body
	corpus    int    // files under testdata/fuzz/<name>
}

// fuzzTargets finds every fuzz target under root with Go's parser, on its
// own (not through .ci/fuzzlist.go): top-level FuncDecls named Fuzz* with
// one *testing.F parameter. Files the build constraints leave out on this
// platform are returned apart, as .ci/fuzz cannot run them here.
func fuzzTargets(t *testing.T, root string) (here, elsewhere []fuzzTarget) {
	t.Helper()
	walkTestFiles(t, root, func(path string, _ []byte, f *ast.File) {
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		match, err := build.Default.MatchFile(filepath.Dir(path), filepath.Base(path))
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") || len(fn.Type.Params.List) != 1 {
				continue
			}
			if star, ok := fn.Type.Params.List[0].Type.(*ast.StarExpr); !ok || types(star.X) != "testing.F" {
				continue
			}
			ft := fuzzTarget{dir: filepath.ToSlash(rel), name: fn.Name.Name}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Add" && types(s.X) == "f" {
						ft.seeds++
					}
				}
				return true
			})
			if es, err := os.ReadDir(filepath.Join(filepath.Dir(path), "testdata", "fuzz", ft.name)); err == nil {
				ft.corpus = len(es)
			}
			if match {
				here = append(here, ft)
			} else {
				elsewhere = append(elsewhere, ft)
			}
		}
	})
	return here, elsewhere
}

// types renders an identifier or a selector (testing.F) as written.
func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return types(e.X) + "." + e.Sel.Name
	}
	return ""
}

// TestFuzzCoversTheTree: `make fuzz` (.ci/fuzz) lists exactly the fuzz
// targets the repository's tests declare, found here independently with
// go/parser, so a target is fuzzed as soon as it is written and nothing
// else is (Go source inside a test's string once was). Every target starts
// from a corpus: seeds written with f.Add or files under testdata/fuzz.
func TestFuzzCoversTheTree(t *testing.T) {
	root := filepath.Join("..", "..")
	here, elsewhere := fuzzTargets(t, root)
	if len(here) < 40 {
		t.Fatalf("found %d fuzz targets; the walk is broken", len(here))
	}
	cmd := exec.Command("bash", filepath.Join(root, ".ci", "fuzz"), "-l")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf(".ci/fuzz -l: %v\n%s", err, out)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, names, _ := strings.Cut(line, " ")
		dir := strings.TrimPrefix(strings.TrimPrefix(pkg, "github.com/skillport/skillport"), "/")
		if dir == "" {
			dir = "."
		}
		for _, n := range strings.Fields(names) {
			listed[dir+" "+n] = true
		}
	}
	for _, ft := range here {
		k := ft.dir + " " + ft.name
		if !listed[k] {
			t.Errorf("%s/%s is not fuzzed by make fuzz (.ci/fuzz -l does not list it)", ft.dir, ft.name)
		}
		delete(listed, k)
		if ft.seeds+ft.corpus == 0 {
			t.Errorf("%s/%s has no corpus: add seeds with f.Add (valid inputs and the edge cases the parser checks) or files under testdata/fuzz/%s", ft.dir, ft.name, ft.name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(listed)) {
		t.Errorf(".ci/fuzz lists %s, which is no fuzz target of the tree", k)
	}
	for _, ft := range elsewhere {
		t.Logf("%s/%s is built on other platforms only; .ci/fuzz fuzzes it there", ft.dir, ft.name)
	}
}
