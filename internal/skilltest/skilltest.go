// Package skilltest holds what the tests of many packages need: a tree of
// skill files on disk, and the skillport command built once for every test
// process of a run (go test ./... runs one process per package, and seven
// packages run the binary).
package skilltest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// WriteTree writes files (slash-separated paths relative to the tree's root,
// to their contents) under a new temporary directory of tb, and returns it.
func WriteTree(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	WriteFiles(tb, dir, files)
	return dir
}

// WriteFiles writes files (slash-separated paths relative to dir, to their
// contents) under dir, creating the directories they need.
func WriteFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for p, content := range files {
		WriteFile(tb, filepath.Join(dir, filepath.FromSlash(p)), content)
	}
}

// WriteFile writes content to the file at path, creating the directories
// it needs.
func WriteFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
	// userCache is the user cache directory as the process started: a test
	// that fakes HOME or XDG_CACHE_HOME (t.Setenv) before the first Binary
	// call must not put the shared binary in its temporary folder, which
	// is removed when that test ends while later tests still run it.
	userCache, userCacheErr = os.UserCacheDir()
)

// Binary returns the path of the skillport command built from this checkout
// ($SKILLPORT_TEST_BIN if set), failing tb if it cannot be built. See Build.
func Binary(tb testing.TB) string {
	tb.Helper()
	bin, err := Build()
	if err != nil {
		tb.Fatalf("building skillport for the tests: %v", err)
	}
	return bin
}

// Build returns the path of the skillport command built from this checkout
// ($SKILLPORT_TEST_BIN if set), for a TestMain that has no testing.TB. The
// binary is kept in the user's cache directory under a hash of every source
// file it is built from (and of the Go version and build environment), so
// the test processes of one go test run, and later runs on unchanged
// sources, share one build: the first process builds while the others wait
// for it.
func Build() (string, error) {
	binOnce.Do(func() {
		if p := os.Getenv("SKILLPORT_TEST_BIN"); p != "" {
			binPath = p
			return
		}
		binPath, binErr = build()
	})
	return binPath, binErr
}

// Root is the module's root directory, which holds go.mod.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

const pkg = "./cmd/skillport"

// lockWait bounds the wait for another process's build. The builder
// touches its lock file every lockBeat, so a lock untouched for lockStale
// was left by a process that died building (a test run interrupted).
const (
	lockWait  = 15 * time.Minute
	lockBeat  = 2 * time.Second
	lockStale = 30 * time.Second
)

func build() (string, error) {
	root := Root()
	key, err := sourceKey(root)
	if err != nil {
		return "", err
	}
	cache, err := userCache, userCacheErr
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "skillport-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	exe := filepath.Join(dir, "skillport-"+key)
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	lock := exe + ".lock"
	for start := time.Now(); ; {
		if _, err := os.Stat(exe); err == nil {
			now := time.Now()
			os.Chtimes(exe, now, now) // in use: not pruned
			return exe, nil
		}
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			defer os.Remove(lock)
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
		if fi, err := os.Stat(lock); err == nil && time.Since(fi.ModTime()) > lockStale {
			os.Remove(lock) // left by a process that died building
			continue
		}
		if time.Since(start) > lockWait {
			return "", fmt.Errorf("waited %v for another test process to build %s (remove %s if none is running)", lockWait, exe, lock)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := os.Stat(exe); err == nil { // built while we took the lock
		return exe, nil
	}
	beat := time.NewTicker(lockBeat)
	defer beat.Stop()
	building := make(chan struct{})
	defer close(building)
	go func() {
		for {
			select {
			case <-building:
				return
			case now := <-beat.C:
				os.Chtimes(lock, now, now)
			}
		}
	}()
	tmp := fmt.Sprintf("%s.%d.tmp", exe, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	if err := os.Rename(tmp, exe); err != nil {
		return "", err
	}
	prune(dir, exe)
	return exe, nil
}

// sourceKey hashes what the build depends on: the Go version and build
// environment, go.mod and go.sum (which pin every other module), and the
// files of this module's packages the command imports, embedded ones
// included.
func sourceKey(root string) (string, error) {
	list := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}}|{{.}}{{end}}{{range .EmbedFiles}}|{{.}}{{end}}{{end}}{{end}}`, pkg)
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%v: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go list %s: %w", pkg, err)
	}
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, v := range []string{"GOFLAGS", "GOOS", "GOARCH", "CGO_ENABLED", "GOEXPERIMENT", "GOAMD64", "GOARM64"} {
		fmt.Fprintf(h, "%s=%s\n", v, os.Getenv(v))
	}
	files := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		for _, f := range parts[1:] {
			files = append(files, filepath.Join(parts[0], f))
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// prune removes binaries of other sources not used for a week, so the cache
// holds a few recent builds, not one per edit ever tested.
func prune(dir, keep string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if p == keep || !strings.HasPrefix(e.Name(), "skillport-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 7*24*time.Hour {
			os.Remove(p)
		}
	}
}
