package ci

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/skilltest"
)

func read(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// commands returns the shell commands of a script or a ```sh block: lines
// that are not blank, comments, or the prologue every script shares.
func commands(script string) []string {
	var out []string
	for _, l := range strings.Split(script, "\n") {
		l = strings.TrimSpace(l)
		if i := strings.Index(l, " #"); i >= 0 {
			l = strings.TrimSpace(l[:i])
		}
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "set -") || strings.HasPrefix(l, "cd ") {
			continue
		}
		out = append(out, strings.TrimPrefix(l, "exec "))
	}
	return out
}

// readmeBlock returns the first ```sh block after the line starting with
// heading.
func readmeBlock(t *testing.T, readme, heading string) string {
	t.Helper()
	i := strings.Index(readme, heading)
	if i < 0 {
		t.Fatalf("README.md has no %q", heading)
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme[i:])
	if m == nil {
		t.Fatalf("README.md: no ```sh block after %q", heading)
	}
	return m[1]
}

func TestCIRunsTheREADMETestCommand(t *testing.T) {
	readme := read(t, "README.md")
	want := commands(readmeBlock(t, readme, "**Run every test**"))
	got := commands(read(t, ".ci/run"))
	if len(want) != 1 || !slices.Equal(got, want) {
		t.Fatalf(".ci/run runs %q, the README's test command is %q; they must be the same single command", got, want)
	}
	if want[0] != "make test" {
		t.Fatalf("README's test command is %q; the Makefile's set-up (packages, interop) hangs off make test", want[0])
	}
}

// The test target must install the system packages itself: a fresh machine
// that follows the README has nothing else.
func TestMakeTestInstallsPackages(t *testing.T) {
	mk := read(t, "Makefile")
	m := regexp.MustCompile(`(?m)^test:(.*)$`).FindStringSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile has no test target")
	}
	for _, dep := range []string{"packages", "interop", "cross"} {
		if !slices.Contains(strings.Fields(m[1]), dep) {
			t.Errorf("make test does not depend on %s (test:%s)", dep, m[1])
		}
	}
	if !strings.Contains(mk, "./.ci/install-packages") {
		t.Error("make packages does not run .ci/install-packages")
	}
}

// Every program the tests shell out to is listed with its Debian package,
// and the README says which packages make test installs.
func TestPackagesListed(t *testing.T) {
	readme := read(t, "README.md")
	for _, l := range strings.Split(read(t, ".ci/packages"), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 2 {
			t.Errorf(".ci/packages: %q: want a command and a Debian package", l)
			continue
		}
		if !strings.Contains(readme, "`"+f[1]+"`") {
			t.Errorf("README.md does not mention the package %s that make test installs", f[1])
		}
	}
}

// Run as a non-root user with a command missing, the installer must stop at
// once with the one command to run rather than half-install or go on.
func TestInstallPackagesNamesTheCommand(t *testing.T) {
	dir := t.TempDir()
	script, err := os.ReadFile("../../.ci/install-packages")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "install-packages"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	list := "# comment\nsh dash\nskillport-no-such-command-a pkg-a\nskillport-no-such-command-b pkg-b\nskillport-no-such-command-c pkg-a\n"
	if err := os.WriteFile(filepath.Join(dir, "packages"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	// A fake id(1) that says we are not root, so apt-get is never reached.
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "id"), []byte("#!/bin/sh\necho 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, filepath.Join(dir, "install-packages"))
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("install-packages succeeded with commands missing:\n%s", out)
	}
	if want := "sudo apt-get install -y pkg-a pkg-b\n"; !strings.HasSuffix(string(out), want) {
		t.Fatalf("install-packages said:\n%s\nwant it to end with %q (each package once)", out, want)
	}
}

// The README's ```json blocks (the Windows mcpServers entry with its doubled
// backslashes) are pasted verbatim into configs, so each must be valid JSON.
func TestREADMEJSONBlocksParse(t *testing.T) {
	n := 0
	for _, name := range docPages(t) {
		blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(read(t, name), -1)
		n += len(blocks)
		for _, b := range blocks {
			var v any
			if err := json.Unmarshal([]byte(b[1]), &v); err != nil {
				t.Errorf("%s: ```json block does not parse: %v\n%s", name, err, b[1])
			}
		}
	}
	if n == 0 {
		t.Fatal("no ```json block in README.md or docs/")
	}
}

// docPages are README.md and every page under docs/, relative to the
// repository's root.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"README.md"}
	for _, p := range pages {
		names = append(names, "docs/"+filepath.Base(p))
	}
	return names
}

// The README's Go snippets are what a newcomer copies, so each must be a run
// of whole lines of a runnable Example function (go test compiles and runs
// those), indented as in the function's body.
func TestREADMEGoSnippetsAreExamples(t *testing.T) {
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(read(t, "README.md"), -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block; its Go library path shows the calls")
	}
	bodies := exampleBodies(t, filepath.Join("..", ".."))
	for _, b := range blocks {
		snippet := "\n" + b[1]
		found := false
		for _, body := range bodies {
			if strings.Contains("\n"+body, snippet) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("README.md ```go block is not part of any Example function's body (copy it from one, or add an Example):\n%s", b[1])
		}
	}
}

// walkTestFiles calls fn with every _test.go file of the repository at
// root, parsed (node_modules, testdata and dot folders left out).
func walkTestFiles(t *testing.T, root string, fn func(path string, src []byte, f *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(path, src, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// exampleBodies returns the bodies of every Example function in the
// repository's tests, one tab of indentation removed, each line ending in
// a newline.
func exampleBodies(t *testing.T, root string) []string {
	t.Helper()
	var bodies []string
	walkTestFiles(t, root, func(path string, src []byte, f *ast.File) {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
				continue
			}
			var body strings.Builder
			inner := string(src[fn.Body.Lbrace+1 : fn.Body.Rbrace-1]) // positions are 1-based offsets
			for _, l := range strings.Split(strings.Trim(inner, "\n"), "\n") {
				body.WriteString(strings.TrimPrefix(l, "\t") + "\n")
			}
			bodies = append(bodies, body.String())
		}
	})
	if len(bodies) == 0 {
		t.Fatal("found no Example function under the repository")
	}
	return bodies
}

// make fuzz must reach every Fuzz target: FuzzParse's pattern once matched
// FuzzParser too and the go command refused both, and targets added after the
// Makefile was written were never fuzzed. .ci/fuzz is run on a small module
// holding exactly those names, plus one target that fails.
func TestFuzzRunsEveryTarget(t *testing.T) {
	mk := read(t, "Makefile")
	if !regexp.MustCompile(`(?m)^fuzz:\n\t.*\./\.ci/fuzz`).MatchString(mk) {
		t.Fatal("make fuzz does not run .ci/fuzz")
	}
	dir := t.TempDir()
	files := map[string]string{
		".ci/fuzz":        read(t, ".ci/fuzz"),
		".ci/fuzzlist.go": read(t, ".ci/fuzzlist.go"),
		"go.mod":          "module example.com/f\n\ngo 1.24\n",
		"p/p_test.go": `package p
import "testing"
func FuzzParse(f *testing.F)  { f.Add("a"); f.Fuzz(func(t *testing.T, s string) {}) }
func FuzzParser(f *testing.F) { f.Add("b"); f.Fuzz(func(t *testing.T, s string) {}) }
`,
		"q/q_test.go": `package q
import "testing"
func FuzzOther(f *testing.F) { f.Add(1); f.Fuzz(func(t *testing.T, n int) {}) }
`,
	}
	skilltest.WriteFiles(t, dir, files) // bash runs .ci/fuzz: no mode needed
	run := func() (string, error) {
		cmd := exec.Command("bash", filepath.Join(dir, ".ci", "fuzz"))
		cmd.Env = append(os.Environ(), "FUZZTIME=5x")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	if err != nil {
		t.Fatalf(".ci/fuzz: %v\n%s", err, out)
	}
	for _, want := range []string{"example.com/f/p FuzzParse (5x)", "example.com/f/p FuzzParser (5x)", "example.com/f/q FuzzOther (5x)", "fuzz: 3 targets"} {
		if !strings.Contains(out, want) {
			t.Errorf(".ci/fuzz output lacks %q:\n%s", want, out)
		}
	}

	skilltest.WriteFiles(t, dir, map[string]string{"q/bad_test.go": `package q
import "testing"
func FuzzBad(f *testing.F) { f.Add(1); f.Fuzz(func(t *testing.T, n int) { t.Fatal("bad") }) }
`})
	out, err = run()
	if err == nil || !strings.Contains(out, "1 of 4 targets failed") || !strings.Contains(out, "example.com/f/q FuzzBad") {
		t.Fatalf(".ci/fuzz with a failing target: %v; want exit 1 naming it\n%s", err, out)
	}
}
