//go:build ignore

// fuzzlist prints "importpath FuzzA FuzzB", a package a line, for the
// packages matching its arguments (go list patterns, default ./...) that
// have fuzz targets: top-level functions FuzzXxx(*testing.F) in the test
// files the go command lists for this GOOS/GOARCH. .ci/fuzz runs it with
// go run. Go's parser, not a line pattern, finds them, so Go source held in
// a test's string (internal/ci writes such modules) is not taken for a
// target, and a signature split over lines is not missed.
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

type pkg struct {
	ImportPath   string
	Dir          string
	TestGoFiles  []string
	XTestGoFiles []string
}

func main() {
	args := append([]string{"list", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles"}, os.Args[1:]...)
	if len(os.Args) < 2 {
		args = append(args, "./...")
	}
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fuzzlist: go list: %v\n", err)
		os.Exit(1)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "fuzzlist: go list output: %v\n", err)
			os.Exit(1)
		}
		var names []string
		for _, f := range append(p.TestGoFiles, p.XTestGoFiles...) {
			n, err := targets(filepath.Join(p.Dir, f))
			if err != nil {
				fmt.Fprintf(os.Stderr, "fuzzlist: %v\n", err)
				os.Exit(1)
			}
			names = append(names, n...)
		}
		if len(names) > 0 {
			slices.Sort(names)
			fmt.Println(p.ImportPath, strings.Join(slices.Compact(names), " "))
		}
	}
}

// targets returns the fuzz targets declared in the Go file at name.
func targets(name string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && isFuzzTarget(fd) {
			out = append(out, fd.Name.Name)
		}
	}
	return out, nil
}

// isFuzzTarget reports whether fd is what go test runs as a fuzz target: a
// function (not a method) named Fuzz followed by nothing or a non-lowercase
// rune, with one parameter of type *testing.F. The file is assumed to
// import "testing" under its own name, as every test file here does.
func isFuzzTarget(fd *ast.FuncDecl) bool {
	n := fd.Name.Name
	if fd.Recv != nil || !strings.HasPrefix(n, "Fuzz") || len(n) > 4 && n[4] >= 'a' && n[4] <= 'z' {
		return false
	}
	ps := fd.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) > 1 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "testing" && sel.Sel.Name == "F"
}
