package scan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Defaults of an [External] scanner's bounds.
const (
	DefaultTimeout     = 60 * time.Second
	DefaultMaxOutput   = 4 << 20
	DefaultMaxFindings = 1000
)

// External is a scanner run as a command: it gets the skill folder (a
// read-only copy in a temporary directory) as its last argument, and
// prints a SARIF 2.1.0 log on stdout. A command that fails, runs past
// Timeout, prints more than MaxOutput bytes or more than MaxFindings
// results, or prints anything but SARIF, is a failed scan ([Scan]'s
// error), never a clean one.
type External struct {
	// ScannerName names the scanner in findings.
	ScannerName string
	// Command is the program and its first arguments.
	Command []string
	// Timeout bounds one run (default DefaultTimeout); the command and
	// its children are killed when it passes.
	Timeout time.Duration
	// MaxOutput bounds stdout (default DefaultMaxOutput).
	MaxOutput int64
	// MaxFindings bounds the results (default DefaultMaxFindings).
	MaxFindings int
}

// ParseExternal reads a scanner of the command line: NAME=COMMAND, the
// command split on spaces (arguments with spaces belong in a script).
func ParseExternal(s string) (*External, error) {
	name, cmd, ok := strings.Cut(s, "=")
	args := strings.Fields(cmd)
	if !ok || name == "" || len(args) == 0 || strings.ContainsAny(name, " /\t") {
		return nil, fmt.Errorf("scanner %q: want NAME=COMMAND, such as semgrep=/usr/local/bin/scan-skill", s)
	}
	return &External{ScannerName: name, Command: args}, nil
}

// Name implements [Scanner].
func (e *External) Name() string { return e.ScannerName }

// Scan implements [Scanner].
func (e *External) Scan(ctx context.Context, s *Skill) ([]Finding, error) {
	if len(e.Command) == 0 {
		return nil, fmt.Errorf("scanner %s: no command configured", e.ScannerName)
	}
	timeout, maxOut, maxFindings := e.Timeout, e.MaxOutput, e.MaxFindings
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if maxOut <= 0 {
		maxOut = DefaultMaxOutput
	}
	if maxFindings <= 0 {
		maxFindings = DefaultMaxFindings
	}
	tmp, err := os.MkdirTemp("", "skillport-scan-")
	if err != nil {
		return nil, fmt.Errorf("scanner %s: %w", e.ScannerName, err)
	}
	defer removeReadOnly(tmp)
	dir := filepath.Join(tmp, "skill")
	if err := writeTree(dir, s.Files); err != nil {
		return nil, fmt.Errorf("scanner %s: writing the skill for it: %w", e.ScannerName, err)
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Command[0], append(e.Command[1:], dir)...)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "SKILLPORT_SKILL_DIR="+dir, "SKILLPORT_SKILL_PATH="+s.Path)
	killGroup(cmd)
	// A child that keeps stdout open after the command is killed must not
	// hold the scan: the pipes are closed shortly after.
	cmd.WaitDelay = time.Second
	stdout := &capped{max: maxOut, over: cancel}
	stderr := &capped{max: 2 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	switch {
	case stdout.exceeded:
		return nil, fmt.Errorf("scanner %s printed more than %d bytes; it was stopped (fix the scanner or raise its limit)", e.ScannerName, maxOut)
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("scanner %s did not finish within %s; it was killed", e.ScannerName, timeout)
	case err != nil:
		return nil, fmt.Errorf("scanner %s failed: %v%s", e.ScannerName, err, stderrTail(stderr))
	}
	fs, err := ParseSARIF(stdout.buf.Bytes(), e.ScannerName, maxFindings)
	if err != nil {
		return nil, fmt.Errorf("scanner %s printed %w", e.ScannerName, err)
	}
	return fs, nil
}

func stderrTail(c *capped) string {
	s := strings.TrimSpace(c.buf.String())
	if s == "" {
		return ""
	}
	return ": " + oneLine(s, 200)
}

// capped keeps up to max bytes and calls over (once) past it.
type capped struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	max      int64
	over     func()
	exceeded bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int64(c.buf.Len()+len(p)) > c.max {
		c.buf.Write(p[:c.max-int64(c.buf.Len())])
		if !c.exceeded && c.over != nil {
			c.exceeded = true
			c.over()
		}
		return 0, errors.New("output limit reached")
	}
	return c.buf.Write(p)
}

// writeTree writes files below dir, read-only: a scanner looks, it does
// not change what is published.
func writeTree(dir string, files []File) error {
	for _, f := range files {
		rel := filepath.FromSlash(f.Path)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("%s: not a path inside the skill", f.Path)
		}
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o444); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(p, 0o555)
	})
}

// removeReadOnly removes a tree writeTree made read-only.
func removeReadOnly(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(dir)
}
