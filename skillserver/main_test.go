package skillserver_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/skilltest"
)

// skillportBin is the skillport binary, built once for the whole run.
var skillportBin string

// examples is the example catalog served to the peers.
var examples string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if spec := os.Getenv(benchServerEnv); spec != "" {
		// This process is a server of the benchmarks (startServerProcess).
		return serveBench(spec)
	}
	dir, err := os.MkdirTemp("", "skillport-server-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	examples = filepath.Join(root, "examples", "skills")
	if skillportBin, err = skilltest.Build(); err != nil {
		fmt.Fprintf(os.Stderr, "building skillport for the peer tests failed: %v\n", err)
		return 1
	}
	return m.Run()
}

// served is a `skillport serve --http` process.
type served struct {
	URL    string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
}

func (s *served) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

var summaryRE = regexp.MustCompile(`^serving \d+ skills? \(\d+ files?, [0-9.]+ [KMG]?i?B\) from .* at (http://\S+/mcp)`)

// serveHTTP starts skillport serve --http 127.0.0.1:0 with extra flags and
// returns once it printed its summary line. It is stopped with SIGTERM when
// the test ends, and the test fails if it does not exit cleanly.
func serveHTTP(t testing.TB, dir string, flags ...string) *served {
	t.Helper()
	args := append([]string{"serve", "--http", "127.0.0.1:0"}, flags...)
	args = append(args, dir)
	s := &served{cmd: exec.Command(skillportBin, args...)}
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting skillport serve: %v", err)
	}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.stderr.WriteString(line + "\n")
			s.mu.Unlock()
			if m := summaryRE.FindStringSubmatch(line); m != nil && !sent {
				urlc <- m[1]
				sent = true
			}
		}
		if !sent {
			close(urlc)
		}
	}()
	select {
	case u, ok := <-urlc:
		if !ok {
			s.cmd.Wait()
			t.Fatalf("skillport serve exited without printing its summary line:\n%s", s.Stderr())
		}
		s.URL = u
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Fatalf("skillport serve printed no summary line within 30s:\n%s", s.Stderr())
	}
	t.Cleanup(func() {
		s.cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- s.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("skillport serve did not shut down cleanly on SIGINT: %v\n%s", err, s.Stderr())
			}
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			t.Errorf("skillport serve did not exit within 10s of SIGINT")
		}
	})
	return s
}
