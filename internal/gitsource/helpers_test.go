package gitsource_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/gittest"
)

// The tests run real git servers on loopback: git http-backend behind
// net/http/cgi, git daemon, and file:// bare repositories. They need the
// git binary (Debian package "git"); without it they fail, saying so.

const httpBackend = "/usr/lib/git-core/git-http-backend"

func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the git binary is needed to run real git servers in these tests (apt-get install git): %v", err)
	}
}

// gitEnv isolates git from the user's configuration.
var gitEnv = gittest.Env

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gitIn(t, dir, nil, args...)
}

func gitIn(t testing.TB, dir string, stdin io.Reader, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// remote is a bare repository under root plus a working clone to commit from.
type remote struct {
	t    testing.TB
	root string // holds repo.git, served by the servers
	bare string
	work string
}

func newRemote(t testing.TB) *remote {
	needGit(t)
	root := t.TempDir()
	r := &remote{t: t, root: root, bare: filepath.Join(root, "repo.git"), work: filepath.Join(t.TempDir(), "work")}
	git(t, root, "init", "-q", "--bare", "-b", "main", r.bare)
	git(t, root, "-C", r.bare, "config", "http.receivepack", "true")
	git(t, root, "init", "-q", "-b", "main", r.work)
	git(t, r.work, "remote", "add", "origin", r.bare)
	return r
}

// commit writes files (a "" value deletes), commits and returns the id.
func (r *remote) commit(msg string, files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.work, filepath.FromSlash(name))
		if content == "" {
			git(r.t, r.work, "rm", "-q", "-r", "--", name)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
		git(r.t, r.work, "add", "--", name)
	}
	git(r.t, r.work, "commit", "-q", "--allow-empty", "-m", msg)
	return git(r.t, r.work, "rev-parse", "HEAD")
}

func (r *remote) push(args ...string) {
	r.t.Helper()
	git(r.t, r.work, append([]string{"push", "-q", "origin"}, args...)...)
}

func (r *remote) fileURL() string { return "file://" + r.bare }

func skillMD(name, desc string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\n# %s\n\nBody of %s.\n", name, desc, name, name)
}

// httpGit serves root with git http-backend; with user set, every request
// needs that basic auth.
type httpGit struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
}

func serveHTTPGit(t testing.TB, root, user, pass string) *httpGit {
	t.Helper()
	if _, err := os.Stat(httpBackend); err != nil {
		t.Fatalf("git http-backend is needed (apt-get install git): %v", err)
	}
	h := &cgi.Handler{Path: httpBackend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root}}
	g := &httpGit{}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.requests++
		g.mu.Unlock()
		if user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			r.Header.Set("REMOTE_USER", u)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(g.Close)
	return g
}

func (g *httpGit) Requests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.requests
}

// serveGitDaemon runs git daemon on loopback for root and returns its git:// base URL.
func serveGitDaemon(t testing.TB, root string) string {
	t.Helper()
	needGit(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--base-path="+root,
		"--listen=127.0.0.1", "--port="+strconv.Itoa(port), root)
	cmd.Env = gitEnv(root)
	var errb logBuffer
	cmd.Stderr = &errb
	// The daemon forks a process per connection: stop them all.
	inOwnGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting git daemon: %v", err)
	}
	t.Cleanup(func() { killGroup(cmd); cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	waitListening(t, "git daemon", addr, &errb)
	return "git://" + addr
}

// waitListening waits until a server started by the test accepts
// connections on addr, failing with its log after five seconds.
func waitListening(t testing.TB, what, addr string, log *logBuffer) {
	t.Helper()
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if i > 100 {
			t.Fatalf("%s did not listen on %s: %v\n%s", what, addr, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func osMkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }
