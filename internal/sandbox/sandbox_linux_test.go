package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newRunner fails the test (never skips) when the sandbox cannot be built:
// .ci/run installs the Debian package bubblewrap.
func newRunner(t *testing.T, opts *Options) *Runner {
	t.Helper()
	r, err := New(opts)
	if err != nil {
		t.Fatalf("the sandbox tests need bubblewrap and prlimit (Debian: apt-get install bubblewrap util-linux): %v", err)
	}
	return r
}

// reachableDir returns a temporary directory the sandbox's uid can traverse,
// as Options.WorkRoot must be.
func reachableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// file is one file of a test skill.
type file struct {
	content string
	mode    fs.FileMode // 0 means 0644
	link    string      // when set, a symbolic link to this target
}

// makeSkill writes a skill directory readable by the sandbox's uid.
func makeSkill(t *testing.T, files map[string]file) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "skill")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if f.link != "" {
			if err := os.Symlink(f.link, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, []byte(f.content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // umask
			t.Fatal(err)
		}
	}
	return dir
}

// run runs a one-file skill holding script as name.
func run(t *testing.T, r *Runner, name, script string, spec Spec) *Result {
	t.Helper()
	spec.SkillDir = makeSkill(t, map[string]file{name: {content: script}})
	spec.Script = name
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run %s: %v", name, err)
	}
	return res
}

func TestNewUnavailable(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no bwrap", Options{Bwrap: "/nonexistent/bwrap"}, "bubblewrap"},
		{"no prlimit", Options{Prlimit: "/nonexistent/prlimit"}, "prlimit"},
		{"prlimit outside /usr", Options{Prlimit: copyTool(t, "prlimit")}, "outside /usr"},
		{"bwrap that fails", Options{Bwrap: "/usr/bin/false"}, "trivial sandboxed command failed"},
		// t.TempDir's parent is 0700: uid 65534 cannot reach it.
		{"private work root", Options{WorkRoot: t.TempDir()}, "chmod o+x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(&tt.opts)
			if tt.name == "private work root" && os.Geteuid() != 0 {
				if err != nil {
					t.Fatalf("a non-root caller's sandbox runs as the caller and can use %s: %v", tt.opts.WorkRoot, err)
				}
				return
			}
			if !errors.Is(err, ErrUnavailable) || r != nil {
				t.Fatalf("New = %v, %v; want ErrUnavailable", r, err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "apt-get install bubblewrap") && !strings.HasPrefix(tt.name, "p") {
				t.Errorf("error %q should mention %q and how to install bubblewrap", err, tt.want)
			}
		})
	}
}

// copyTool copies a host tool outside /usr.
func copyTool(t *testing.T, name string) string {
	t.Helper()
	src, err := lookTool("", name)
	if err != nil {
		t.Fatalf("%s is needed on the host: %v", name, err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestRun(t *testing.T) {
	r := newRunner(t, nil)
	tests := []struct {
		name       string
		files      map[string]file
		script     string
		args       []string
		stdin      string
		wantExit   int
		wantStdout string
		wantStderr string
	}{
		{
			name:       "python by extension, not executable",
			files:      map[string]file{"scripts/hello.py": {content: "import sys\nprint('hello', sys.argv[1:])\n"}},
			script:     "scripts/hello.py",
			args:       []string{"a b", "--c"},
			wantStdout: "hello ['a b', '--c']\n",
		},
		{
			name:       "sh by extension reads stdin",
			files:      map[string]file{"run.sh": {content: "read x; echo \"got $x\"; echo oops >&2; exit 3\n"}},
			script:     "run.sh",
			stdin:      "input\n",
			wantExit:   3,
			wantStdout: "got input\n",
			wantStderr: "oops\n",
		},
		{
			name:       "shebang without extension or exec bit",
			files:      map[string]file{"tool": {content: "#!/usr/bin/env python3\nprint(2+2)\n"}},
			script:     "tool",
			wantStdout: "4\n",
		},
		{
			name:       "shebang with argument, executable",
			files:      map[string]file{"t.sh": {content: "#!/bin/sh -e\necho \"$0\"; false; echo unreachable\n", mode: 0o755}},
			script:     "t.sh",
			wantExit:   1,
			wantStdout: "/skill/t.sh\n",
		},
		{
			name:       "perl",
			files:      map[string]file{"x.pl": {content: "print \"perl ok\\n\";\n"}},
			script:     "x.pl",
			wantStdout: "perl ok\n",
		},
		{
			name:       "script beside its helpers, symlink inside the skill",
			files:      map[string]file{"scripts/main.py": {content: "import helper\nhelper.hi()\n"}, "scripts/helper.py": {content: "def hi(): print('hi from helper')\n"}, "run.py": {link: "scripts/main.py"}},
			script:     "run.py",
			wantStdout: "hi from helper\n", // python puts the link target's directory on sys.path
		},
		{
			name:       "module import from script directory",
			files:      map[string]file{"scripts/main.py": {content: "import helper\nhelper.hi()\n"}, "scripts/helper.py": {content: "def hi(): print('hi from helper')\n"}},
			script:     "scripts/main.py",
			wantStdout: "hi from helper\n",
		},
		{
			name:       "cwd and HOME are the work dir",
			files:      map[string]file{"w.sh": {content: "pwd; echo \"$HOME\"; id -u\n"}},
			script:     "w.sh",
			wantStdout: "/work\n/work\n65534\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := makeSkill(t, tt.files)
			res, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: tt.script, Args: tt.args, Stdin: []byte(tt.stdin)})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.wantExit || res.Reason != "" {
				t.Errorf("exit %d reason %q, want %d; stderr %s", res.ExitCode, res.Reason, tt.wantExit, res.Stderr)
			}
			if tt.wantStdout != "" && string(res.Stdout) != tt.wantStdout {
				t.Errorf("stdout %q, want %q (stderr %s)", res.Stdout, tt.wantStdout, res.Stderr)
			}
			if !strings.Contains(string(res.Stderr), tt.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", res.Stderr, tt.wantStderr)
			}
		})
	}
}

func TestScriptErrors(t *testing.T) {
	r := newRunner(t, nil)
	outside := filepath.Join(t.TempDir(), "outside.sh")
	if err := os.WriteFile(outside, []byte("echo escaped\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := makeSkill(t, map[string]file{
		"scripts/ok.sh":   {content: "echo ok\n"},
		"abs-link.sh":     {link: outside},
		"rel-link.sh":     {link: "../../" + filepath.Base(filepath.Dir(outside)) + "/outside.sh"},
		"data.txt":        {content: "just text\n"},
		"pyenv":           {content: "#!/root/.pyenv/shims/python3\nprint(1)\n"},
		"relative-interp": {content: "#!python3\nprint(1)\n"},
		"unknown.xyz":     {content: "binary?\n"},
	})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, skillDir, script string
		want                   error
	}{
		{"empty", dir, "", ErrScriptNotFound},
		{"dot dot", dir, "../skill/scripts/ok.sh", ErrScriptNotFound},
		{"dot dot inside", dir, "scripts/../../x.sh", ErrScriptNotFound},
		{"absolute", dir, "/etc/passwd", ErrScriptNotFound},
		{"missing", dir, "scripts/missing.sh", ErrScriptNotFound},
		{"directory", dir, "scripts", ErrScriptNotFound},
		{"absolute symlink out", dir, "abs-link.sh", ErrScriptNotFound},
		{"relative symlink out", dir, "rel-link.sh", ErrScriptNotFound},
		{"named pipe", dir, "fifo.sh", ErrScriptNotFound},
		{"no skill dir", filepath.Join(dir, "nope"), "scripts/ok.sh", ErrScriptNotFound},
		{"no skill dir given", "", "scripts/ok.sh", ErrScriptNotFound},
		{"no interpreter", dir, "data.txt", ErrNoInterpreter},
		{"unknown extension", dir, "unknown.xyz", ErrNoInterpreter},
		{"interpreter outside /usr", dir, "pyenv", ErrNoInterpreter},
		{"relative interpreter", dir, "relative-interp", ErrNoInterpreter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Run(context.Background(), Spec{SkillDir: tt.skillDir, Script: tt.script})
			if tt.name == "no skill dir" && err != nil && errors.Is(err, fs.ErrNotExist) {
				return // os.OpenRoot's own error names the directory
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Run = %+v, %v; want %v", res, err, tt.want)
			}
			if !strings.Contains(err.Error(), "sandbox: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

// TestPrivateSkill: the skill is copied for the sandbox's unprivileged uid,
// so a skill only its owner may read, under a private directory, still runs,
// and the copy is gone afterwards.
func TestPrivateSkill(t *testing.T) {
	workRoot := reachableDir(t)
	r := newRunner(t, &Options{WorkRoot: workRoot})
	dir := makeSkill(t, map[string]file{
		"scripts/a.sh":     {content: "cat /skill/data/private.txt; ls -l /skill/scripts/b.sh | cut -c1-10\n", mode: 0o600},
		"scripts/b.sh":     {content: "echo b\n", mode: 0o700},
		"data/private.txt": {content: "secret data\n", mode: 0o600},
		"link":             {link: "data/private.txt"},
	})
	for _, d := range []string{dir, filepath.Join(dir, "scripts"), filepath.Join(dir, "data"), filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	res, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: "scripts/a.sh"})
	if err != nil {
		t.Fatal(err)
	}
	// Inside, the skill is a read-only copy that keeps only the execute bit.
	if want := "secret data\n-r-xr-xr-x\n"; string(res.Stdout) != want || res.Failed() {
		t.Errorf("stdout %q (exit %d, %s), want %q", res.Stdout, res.ExitCode, res.Stderr, want)
	}
	if ents, err := os.ReadDir(workRoot); err != nil || len(ents) != 0 {
		t.Errorf("work root holds %v after the run (%v)", ents, err)
	}
}

func TestSkillTooLarge(t *testing.T) {
	r := newRunner(t, nil)
	dir := makeSkill(t, map[string]file{"a.sh": {content: "echo a\n"}, "b.bin": {content: strings.Repeat("x", 1000)}, "c/d": {content: "d"}})
	tests := []struct {
		name   string
		limits Limits
	}{
		{"bytes", Limits{SkillBytes: 1007}},
		{"files", Limits{SkillFiles: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: "a.sh", Limits: tt.limits})
			if !errors.Is(err, ErrSkillTooLarge) {
				t.Fatalf("Run = %+v, %v; want ErrSkillTooLarge", res, err)
			}
		})
	}
	if res, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: "a.sh", Limits: Limits{SkillBytes: 1008, SkillFiles: 4}}); err != nil || string(res.Stdout) != "a\n" {
		t.Errorf("at the limits: Run = %+v, %v", res, err)
	}
}

func TestNoNetwork(t *testing.T) {
	r := newRunner(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	script := `import socket, sys
def try_connect(host, port):
    try:
        socket.create_connection((host, port), timeout=2).close()
        return "connected"
    except OSError as e:
        return "failed"
print("host-loopback", try_connect("127.0.0.1", int(sys.argv[1])))
print("outside", try_connect("10.255.255.1", 80))
print("dns", try_connect("example.com", 80))
print("interfaces", ",".join(sorted(n for _, n in socket.if_nameindex())))
`
	res := run(t, r, "net.py", script, Spec{Args: []string{port}})
	want := "host-loopback failed\noutside failed\ndns failed\ninterfaces lo\n"
	if string(res.Stdout) != want || res.ExitCode != 0 {
		t.Fatalf("stdout %q (exit %d, stderr %s), want %q", res.Stdout, res.ExitCode, res.Stderr, want)
	}
	select {
	case <-accepted:
		t.Fatal("the host's listener accepted a connection from the sandbox")
	default:
	}
}

// TestFilesystem runs one script that tries each probe and prints whether it
// succeeded.
func TestFilesystem(t *testing.T) {
	r := newRunner(t, nil)
	home := t.TempDir()
	t.Setenv("HOME", home)
	canary := "skillport-canary-" + strconv.Itoa(os.Getpid())
	homeCanary := filepath.Join(home, "canary")
	otherCanary := filepath.Join(t.TempDir(), "canary")
	tmpCanary, err := os.CreateTemp("", canary)
	if err != nil {
		t.Fatal(err)
	}
	tmpCanary.Close()
	defer os.Remove(tmpCanary.Name())
	for _, p := range []string{homeCanary, otherCanary, tmpCanary.Name()} {
		if err := os.WriteFile(p, []byte(canary), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cwd, _ := os.Getwd()
	probes := []struct {
		name, cmd string
		allowed   bool
	}{
		{"read canary in host HOME", "cat " + homeCanary, false},
		{"read canary in another dir", "cat " + otherCanary, false},
		{"read canary in host /tmp", "cat " + tmpCanary.Name(), false},
		{"see host working dir", "test -e " + filepath.Join(cwd, "sandbox_test.go"), false},
		{"read /etc/shadow", "cat /etc/shadow", false},
		{"list /root", "ls /root", false},
		{"list /home", "ls /home", false},
		{"list /sys", "ls /sys/class", false},
		{"read own skill", "cat /skill/probe.sh", true},
		{"write /skill", "echo x > /skill/new", false},
		{"overwrite own script", "echo x > /skill/probe.sh", false},
		{"write /usr", "echo x > /usr/new", false},
		{"write /", "echo x > /new", false},
		{"write /etc", "echo x > /etc/new", false},
		{"write /dev", "echo x > /dev/new", false},
		{"write /proc/sys", "echo x > /proc/sys/kernel/domainname", false},
		{"write /work", "echo x > /work/new && cat /work/new", true},
		{"write /tmp", "echo x > /tmp/new && cat /tmp/new", true},
		{"fresh /proc", "test $(ls /proc | grep -c '^[0-9]') -lt 10", true},
		{"see test process", "test -e /proc/" + strconv.Itoa(os.Getpid()) + "/status", false},
		{"no capabilities", "grep -q 'CapEff:.0000000000000000' /proc/self/status", true},
		{"no new privileges", "grep -q 'NoNewPrivs:.1' /proc/self/status", true},
		{"new user namespace", "unshare -U true", false},
		{"mount", "mount -t tmpfs none /tmp", false},
		{"not root", "test $(id -u) != 0", true},
	}
	var script strings.Builder
	for i, p := range probes {
		fmt.Fprintf(&script, "if (%s) >/dev/null 2>&1; then echo '%d yes'; else echo '%d no'; fi\n", p.cmd, i, i)
	}
	dir := makeSkill(t, map[string]file{"probe.sh": {content: script.String()}})
	res, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: "probe.sh"})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if len(lines) != len(probes) {
		t.Fatalf("got %d answers for %d probes: %q (stderr %s)", len(lines), len(probes), res.Stdout, res.Stderr)
	}
	for i, p := range probes {
		want := fmt.Sprintf("%d no", i)
		if p.allowed {
			want = fmt.Sprintf("%d yes", i)
		}
		if lines[i] != want {
			t.Errorf("%s (%s): got %q, want %q", p.name, p.cmd, lines[i], want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "probe.sh")); err != nil || string(data) != script.String() {
		t.Errorf("the skill's script changed on the host: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("the script created a file in the host's skill directory")
	}
}

func TestEnvironment(t *testing.T) {
	r := newRunner(t, nil)
	const secret = "skillport-test-secret-value"
	t.Setenv("SKILLPORT_TEST_SECRET", secret)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	script := `import os
for k in sorted(os.environ): print(k + "=" + os.environ[k])
print(open("/proc/1/environ").read().replace("\0", "\n"))
`
	res := run(t, r, "env.py", script, Spec{})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	if bytes.Contains(res.Stdout, []byte(secret)) {
		t.Fatalf("the script saw the host's secret:\n%s", res.Stdout)
	}
	env, _, _ := strings.Cut(string(res.Stdout), "\n\n")
	want := "HOME=/work\nLANG=C.UTF-8\nPATH=/usr/local/bin:/usr/bin:/bin\nPWD=/work\nTMPDIR=/tmp"
	if !strings.HasPrefix(string(res.Stdout), want+"\n") {
		t.Errorf("environment:\n%s\nwant exactly:\n%s", env, want)
	}
}

func TestLimits(t *testing.T) {
	r := newRunner(t, nil)
	tests := []struct {
		name, file, script string
		limits             Limits
		reason             string
		exit               int // checked when not 0
		truncated          bool
	}{
		{
			name: "fork bomb", file: "bomb.sh",
			script: "bomb() { bomb | bomb & }\nbomb\nwait\nsleep 60\n",
			limits: Limits{Processes: 32, WallClock: 5 * time.Second},
			reason: ReasonProcesses,
		},
		{
			name: "python fork loop", file: "forks.py",
			script: "import os, time\nwhile True:\n    if os.fork() == 0:\n        time.sleep(60)\n",
			limits: Limits{Processes: 16, WallClock: 5 * time.Second},
			reason: ReasonProcesses, exit: 1,
		},
		{
			name: "busy loop hits CPU limit", file: "spin.py",
			script: "while True:\n    pass\n",
			limits: Limits{CPUTime: time.Second, WallClock: 20 * time.Second},
			reason: ReasonCPU, exit: 128 + int(syscall.SIGXCPU),
		},
		{
			name: "busy loop hits wall clock", file: "spin.sh",
			script: "while :; do :; done\n",
			limits: Limits{CPUTime: 60 * time.Second, WallClock: time.Second},
			reason: ReasonTimeout, exit: -1,
		},
		{
			name: "sleep hits wall clock", file: "sleep.sh",
			script: "sleep 60\n",
			limits: Limits{WallClock: time.Second},
			reason: ReasonTimeout, exit: -1,
		},
		{
			name: "memory hog at once", file: "hog.py",
			script: "x = bytearray(2 << 30)\n",
			limits: Limits{MemoryBytes: 256 << 20},
			reason: ReasonMemory, exit: 1,
		},
		{
			name: "memory hog little by little", file: "leak.py",
			script: "l = []\nwhile True:\n    l.append(bytearray(1 << 20))\n",
			limits: Limits{MemoryBytes: 256 << 20},
			reason: ReasonMemory, exit: 1,
		},
		{
			name: "100 MiB on stdout", file: "flood.sh",
			script: "head -c 104857600 /dev/zero\nsleep 60\n",
			limits: Limits{OutputBytes: 1 << 20},
			reason: ReasonOutput, exit: -1, truncated: true,
		},
		{
			name: "endless stderr", file: "yes.sh",
			script: "yes error >&2\n",
			limits: Limits{OutputBytes: 64 << 10},
			reason: ReasonOutput, exit: -1, truncated: true,
		},
		{
			name: "file past the size limit", file: "big.sh",
			script: "exec head -c 10000000 /dev/zero > big\n",
			limits: Limits{FileSizeBytes: 1 << 20},
			reason: ReasonFileSize, exit: 128 + int(syscall.SIGXFSZ),
		},
		{
			name: "python file past the size limit", file: "big.py",
			script: "open('big', 'wb').write(b'x' * 10000000)\n",
			limits: Limits{FileSizeBytes: 1 << 20},
			reason: ReasonFileSize, exit: 1,
		},
		{
			name: "many files", file: "many.sh",
			script: "i=0; while :; do : > f$i; i=$((i+1)); done\n",
			limits: Limits{WorkDirFiles: 500, WallClock: 20 * time.Second},
			reason: ReasonDisk, exit: -1,
		},
		{
			name: "many small files fill the work dir", file: "fill.sh",
			script: "i=0; while :; do head -c 100000 /dev/zero > f$i; i=$((i+1)); done\n",
			limits: Limits{WorkDirBytes: 5 << 20, WallClock: 20 * time.Second},
			reason: ReasonDisk, exit: -1,
		},
		{
			name: "tmpfs is bounded", file: "tmp.sh",
			script: "head -c 10000000 /dev/zero > /tmp/x\n",
			limits: Limits{TmpBytes: 1 << 20},
			exit:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, r, tt.file, tt.script, Spec{Limits: tt.limits})
			if res.Reason != tt.reason {
				t.Errorf("reason %q, want %q (exit %d, stderr %.300s)", res.Reason, tt.reason, res.ExitCode, res.Stderr)
			}
			if tt.exit != 0 && res.ExitCode != tt.exit {
				t.Errorf("exit %d, want %d", res.ExitCode, tt.exit)
			}
			if res.Truncated != tt.truncated {
				t.Errorf("truncated %v, want %v", res.Truncated, tt.truncated)
			}
			l := tt.limits.merge(defaultLimits)
			if n := int64(len(res.Stdout) + len(res.Stderr)); n > l.OutputBytes || tt.truncated && n != l.OutputBytes {
				t.Errorf("kept %d bytes of output, limit %d", n, l.OutputBytes)
			}
			// Not a speed target: a run that outlives its wall clock by
			// seconds was not stopped by it.
			if res.Duration > l.WallClock+3*time.Second {
				t.Errorf("took %v with a wall clock of %v", res.Duration, l.WallClock)
			}
			if !res.Failed() {
				t.Error("Failed() = false")
			}
		})
	}
}

// TestProcessLimit counts the processes a script manages to start: the limit
// holds exactly (it includes the sandbox's init and the script itself), not
// merely until the wall clock ends the run.
func TestProcessLimit(t *testing.T) {
	r := newRunner(t, nil)
	script := `import os, sys, time
n = 0
for _ in range(200):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
    except OSError:
        break
print(n)
sys.stdout.flush()
os._exit(0)
`
	for _, limit := range []int{8, 20} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			res := run(t, r, "count.py", script, Spec{Limits: Limits{Processes: limit}})
			n, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("stdout %q, exit %d, stderr %s", res.Stdout, res.ExitCode, res.Stderr)
			}
			// bwrap's init and the script count too.
			if want := limit - 2; n != want {
				t.Errorf("started %d children with a limit of %d processes, want %d", n, limit, want)
			}
		})
	}
}

// TestNothingLeftBehind: when a run ends, every process it started is gone.
func TestNothingLeftBehind(t *testing.T) {
	r := newRunner(t, nil)
	marker := "skillport-leftover-" + strconv.Itoa(os.Getpid())
	tests := []struct {
		name   string
		script string
		cancel bool
	}{
		{"main process exits", "sh -c 'sleep 300' " + marker + " &\nsetsid sh -c 'sleep 300' " + marker + " &\necho started\n", false},
		{"timeout", "sh -c 'sleep 300' " + marker + " &\nsleep 300\n", false},
		{"caller cancels", "sh -c 'sleep 300' " + marker + " &\nsleep 300\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				time.AfterFunc(500*time.Millisecond, cancel)
			}
			dir := makeSkill(t, map[string]file{"bg.sh": {content: tt.script}})
			start := time.Now()
			_, err := r.Run(ctx, Spec{SkillDir: dir, Script: "bg.sh", Limits: Limits{WallClock: time.Second}})
			if tt.cancel != errors.Is(err, context.Canceled) {
				t.Fatalf("Run error %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Run returned after %v", d)
			}
			if pids := processesWith(t, marker); len(pids) > 0 {
				for _, p := range pids {
					syscall.Kill(p, syscall.SIGKILL)
				}
				t.Fatalf("processes %v outlived the run", pids)
			}
		})
	}
}

func processesWith(t *testing.T, marker string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestOutputs(t *testing.T) {
	workRoot := reachableDir(t)
	r := newRunner(t, &Options{WorkRoot: workRoot})
	script := `echo hello > a.txt
mkdir -p sub/deeper && printf '{"k":1}' > sub/deeper/b.json
printf '\211PNG\r\n\032\n' > noext
ln -s /etc/passwd link.txt
ln -s a.txt rel-link.txt
mkfifo fifo
ln -s / rootlink
`
	tests := []struct {
		name      string
		extra     string
		limits    Limits
		want      []Output
		truncated bool
	}{
		{
			name: "regular files only",
			want: []Output{
				{Path: "a.txt", Size: 6, Data: []byte("hello\n"), MIMEType: "text/plain; charset=utf-8"},
				{Path: "noext", Size: 8, Data: []byte("\x89PNG\r\n\x1a\n"), MIMEType: "image/png"},
				{Path: "sub/deeper/b.json", Size: 7, Data: []byte(`{"k":1}`), MIMEType: "application/json"},
			},
		},
		{
			name:   "count limit",
			limits: Limits{OutputFiles: 2},
			want: []Output{
				{Path: "a.txt", Size: 6, Data: []byte("hello\n"), MIMEType: "text/plain; charset=utf-8"},
				{Path: "noext", Size: 8, Data: []byte("\x89PNG\r\n\x1a\n"), MIMEType: "image/png"},
			},
			truncated: true,
		},
		{
			name:   "byte limit",
			limits: Limits{OutputFileBytes: 10},
			want: []Output{
				{Path: "a.txt", Size: 6, Data: []byte("hello\n"), MIMEType: "text/plain; charset=utf-8"},
				{Path: "noext", Size: 8, Data: []byte("\x89PNG"), MIMEType: "application/octet-stream", Truncated: true},
				{Path: "sub/deeper/b.json", Size: 7, Data: []byte{}, MIMEType: "application/json", Truncated: true},
			},
			truncated: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, r, "out.sh", script, Spec{Limits: tt.limits})
			if res.ExitCode != 0 {
				t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			if len(res.Outputs) != len(tt.want) || res.OutputsTruncated != tt.truncated {
				t.Fatalf("outputs %+v (truncated %v), want %+v (truncated %v)", res.Outputs, res.OutputsTruncated, tt.want, tt.truncated)
			}
			for i, w := range tt.want {
				g := res.Outputs[i]
				if g.Path != w.Path || g.Size != w.Size || !bytes.Equal(g.Data, w.Data) || g.MIMEType != w.MIMEType || g.Truncated != w.Truncated {
					t.Errorf("output %d = %+v, want %+v", i, g, w)
				}
			}
			if ents, err := os.ReadDir(workRoot); err != nil || len(ents) != 0 {
				t.Errorf("work root holds %v after the run (%v)", ents, err)
			}
		})
	}
}

func TestParseShebang(t *testing.T) {
	tests := []struct {
		in, interp, arg string
		ok              bool
	}{
		{"#!/bin/sh\necho", "/bin/sh", "", true},
		{"#! /usr/bin/env python3 \r\n", "/usr/bin/env", "python3", true},
		{"#!/usr/bin/env -S python3 -u\n", "/usr/bin/env", "-S python3 -u", true},
		{"#!/bin/sh", "/bin/sh", "", true},
		{"#!\n", "", "", false},
		{"#!   \n", "", "", false},
		{"echo hi\n", "", "", false},
		{"", "", "", false},
		{"#!/bin/s\x00h\n", "", "", false},
	}
	for _, tt := range tests {
		interp, arg, ok := parseShebang([]byte(tt.in))
		if interp != tt.interp || arg != tt.arg || ok != tt.ok {
			t.Errorf("parseShebang(%q) = %q, %q, %v; want %q, %q, %v", tt.in, interp, arg, ok, tt.interp, tt.arg, tt.ok)
		}
	}
}

func FuzzParseShebang(f *testing.F) {
	for _, s := range []string{"#!/bin/sh\n", "#! /usr/bin/env -S a b\r\n", "#!", "x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		interp, arg, ok := parseShebang(head)
		if !ok {
			return
		}
		if interp == "" || strings.ContainsAny(interp, " \t\n\x00") || strings.ContainsAny(arg, "\n\x00") {
			t.Fatalf("parseShebang(%q) = %q, %q", head, interp, arg)
		}
	})
}

// TestLimitsMerge: every Limits field has a default and is merged.
func TestLimitsMerge(t *testing.T) {
	d := reflect.ValueOf(DefaultLimits())
	for i := range d.NumField() {
		if d.Field(i).IsZero() {
			t.Errorf("Limits.%s has no default", d.Type().Field(i).Name)
		}
	}
	if got := (Limits{}).merge(DefaultLimits()); got != DefaultLimits() {
		t.Errorf("zero merged with defaults = %+v", got)
	}
	one := Limits{}
	ov := reflect.ValueOf(&one).Elem()
	for i := range ov.NumField() {
		ov.Field(i).SetInt(1)
	}
	if got := one.merge(DefaultLimits()); got != one {
		t.Errorf("set fields were replaced: %+v", got)
	}
}

// A machine without bubblewrap gets an error naming the package to install,
// which is what the tests print when they cannot build a sandbox.
func TestMissingBwrapNamesPackage(t *testing.T) {
	_, err := New(&Options{Bwrap: filepath.Join(t.TempDir(), "bwrap")})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Fatalf("New without bwrap: %v; want ErrUnavailable naming apt-get install bubblewrap", err)
	}
}
