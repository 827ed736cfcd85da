package peers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultTimeout bounds a Command whose Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// Command describes one peer invocation for Run and Start.
type Command struct {
	// Args is the argv; Args[0] is the program, e.g. Node(t).
	Args []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// Env is the whole environment; nil means os.Environ(). See Env.
	Env []string
	// Stdin feeds standard input; nil means none.
	Stdin io.Reader
	// Timeout bounds the run (Run only); zero means DefaultTimeout.
	Timeout time.Duration
}

// Result is what a finished command wrote and how it ended.
type Result struct {
	// Stdout and Stderr hold everything the command wrote.
	Stdout, Stderr []byte
	// ExitCode is the exit status, or -1 when the command did not start,
	// was killed, or timed out.
	ExitCode int
}

// Run runs c to completion, capturing stdout and stderr, and kills it (with
// everything it spawned) when ctx ends or c.Timeout passes. The Result is
// always filled in as far as the run got. The error is non-nil when the
// command could not start, timed out, or exited non-zero; its text names the
// command and ends with the tail of both outputs. Callers that expect a
// particular non-zero status check Result.ExitCode instead of the error.
func Run(ctx context.Context, c Command) (Result, error) {
	if len(c.Args) == 0 {
		return Result{ExitCode: -1}, errors.New("peers.Run: empty Args")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.Stdin = c.Stdin
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	ownGroup(cmd)
	cmd.Cancel = func() error {
		killGroup(cmd)
		return nil
	}
	cmd.WaitDelay = 5 * time.Second

	err := cmd.Run()
	killGroup(cmd)
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	var reason string
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		reason = fmt.Sprintf("killed: %v (timeout %v)", ctx.Err(), timeout)
		res.ExitCode = -1
	case cmd.ProcessState == nil:
		reason = fmt.Sprintf("cannot start: %v", err)
	default:
		reason = err.Error()
	}
	return res, fmt.Errorf("%s: %s%s", describe(c.Args), reason, outputTails(res.Stdout, res.Stderr))
}

// describe renders argv for error messages, shortening long paths.
func describe(args []string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if len(a) > 120 {
			a = "…" + a[len(a)-119:]
		}
		parts[i] = a
	}
	return ShellJoin(parts...)
}

func outputTails(stdout, stderr []byte) string {
	var b strings.Builder
	b.WriteString("\n--- stdout (tail) ---\n")
	b.WriteString(tail(stdout, 40, 4096))
	b.WriteString("\n--- stderr (tail) ---\n")
	b.WriteString(tail(stderr, 40, 4096))
	return b.String()
}

// tail returns at most the last maxLines lines and maxBytes bytes of out.
func tail(out []byte, maxLines, maxBytes int) string {
	s := strings.TrimRight(string(out), "\n")
	if s == "" {
		return "(empty)"
	}
	cut := false
	if len(s) > maxBytes {
		s = s[len(s)-maxBytes:]
		cut = true
	}
	if lines := strings.Split(s, "\n"); len(lines) > maxLines {
		s = strings.Join(lines[len(lines)-maxLines:], "\n")
		cut = true
	}
	if cut {
		s = "…\n" + s
	}
	return s
}

// Process is a peer started in the background by Start.
type Process struct {
	args   []string
	cmd    *exec.Cmd
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan struct{}
	err    error
	stop   sync.Once
}

// Start starts c in the background (c.Timeout is ignored) and registers a
// cleanup that stops it, with everything it spawned, when the test ends. A
// command that cannot start fails the test.
func Start(t testing.TB, c Command) *Process {
	t.Helper()
	if len(c.Args) == 0 {
		t.Fatalf("peers.Start: empty Args")
	}
	p := &Process{args: c.Args, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(c.Args[0], c.Args[1:]...)
	p.cmd.Dir = c.Dir
	p.cmd.Env = c.Env
	p.cmd.Stdin = c.Stdin
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = p.stderr
	ownGroup(p.cmd)
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: cannot start: %v", describe(c.Args), err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.Stop)
	return p
}

// WaitForLine waits until the process writes a stdout line starting with
// prefix and returns that line. It fails the test, showing both outputs, when
// the process exits first or timeout passes.
func (p *Process) WaitForLine(t testing.TB, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, line := range strings.Split(p.stdout.String(), "\n") {
			if strings.HasPrefix(line, prefix) {
				return strings.TrimRight(line, "\r")
			}
		}
		select {
		case <-p.done:
			// One more look: the line may have arrived with the exit.
			for _, line := range strings.Split(p.stdout.String(), "\n") {
				if strings.HasPrefix(line, prefix) {
					return strings.TrimRight(line, "\r")
				}
			}
			t.Fatalf("%s exited (%v) before printing %q%s", describe(p.args), p.err, prefix, outputTails(p.stdout.Bytes(), p.stderr.Bytes()))
		case <-deadline:
			t.Fatalf("%s printed no line starting with %q within %v%s", describe(p.args), prefix, timeout, outputTails(p.stdout.Bytes(), p.stderr.Bytes()))
		case <-tick.C:
		}
	}
}

// Pid returns the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output returns what the process has written so far.
func (p *Process) Output() (stdout, stderr string) {
	return p.stdout.String(), p.stderr.String()
}

// Stop terminates the process and everything it spawned (SIGTERM, then
// SIGKILL after two seconds) and waits for it. It is safe to call more than
// once; Start registers it as a test cleanup.
func (p *Process) Stop() {
	p.stop.Do(func() {
		select {
		case <-p.done:
		default:
			terminateGroup(p.cmd)
			select {
			case <-p.done:
			case <-time.After(2 * time.Second):
				killGroup(p.cmd)
				<-p.done
			}
		}
		killGroup(p.cmd)
	})
}

// StartTSServer starts the TypeScript SDK reference server
// (interop/ts-skills-server.mjs) serving skillsDir over Streamable HTTP on
// 127.0.0.1 and returns its endpoint URL (http://127.0.0.1:PORT/mcp). extra
// flags (--prefix, --page-size, --legacy, --strict) go before the directory.
// The server is stopped when the test ends.
func StartTSServer(t testing.TB, skillsDir string, extra ...string) string {
	t.Helper()
	url, _ := StartTSServerProcess(t, skillsDir, extra...)
	return url
}

// StartTSServerProcess is StartTSServer, and returns the server's process
// too (a benchmark reads its CPU time).
func StartTSServerProcess(t testing.TB, skillsDir string, extra ...string) (string, *Process) {
	t.Helper()
	args := []string{Node(t), Script(t, "ts-skills-server.mjs"), "--http", "127.0.0.1:0"}
	args = append(args, extra...)
	args = append(args, skillsDir)
	p := Start(t, Command{Args: args, Env: Env(t)})
	line := p.WaitForLine(t, "listening ", 30*time.Second)
	return strings.TrimPrefix(line, "listening "), p
}

// hfServerRel is Hugging Face's MCP server, Streamable HTTP entry point
// (stateless, JSON responses); its stdio entry point serves no skills.
const hfServerRel = "node_modules/@llmindset/hf-mcp-server/dist/server/streamableHttp.js"

// StartHFServer starts Hugging Face's hf-mcp-server (npm
// @llmindset/hf-mcp-server) serving the skills distribution in dir over
// Streamable HTTP on 127.0.0.1 and returns its endpoint URL. dir must hold
// the distribution's skills.json ({"skills": [{uri, frontmatter,
// resources: [{uri, digest}]}]}) beside the files it names; the server
// checks every digest and refuses a manifest that misses a file. It runs
// offline: no Hugging Face token is passed, so it makes no Hub call and
// logs nowhere but its own output. It is stopped when the test ends.
func StartHFServer(t testing.TB, dir string) string {
	t.Helper()
	env := []string{"HF_SKILLS_DIR=" + dir, "NODE_ENV=production", "LOG_LEVEL=warn"}
	for _, kv := range Env(t) {
		name, _, _ := strings.Cut(kv, "=")
		if strings.Contains(name, "HF_") || name == "NODE_ENV" || name == "LOG_LEVEL" {
			continue
		}
		env = append(env, kv)
	}
	args := []string{Node(t), "--import", Script(t, "hf-loopback.mjs"), entry(t, hfServerRel), "--port", "0"}
	p := Start(t, Command{Args: args, Dir: Dir(t), Env: env})
	line := p.WaitForLine(t, "listening ", 60*time.Second)
	return strings.TrimPrefix(line, "listening ")
}

// lockedBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
