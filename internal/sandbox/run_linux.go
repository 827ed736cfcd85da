package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const installHint = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap) and util-linux's prlimit, and allow user namespaces"

// New checks that sandboxes can be built here by running a trivial command
// in one, and returns a Runner. The error wraps [ErrUnavailable] and says
// what to install or enable when they cannot.
func New(opts *Options) (*Runner, error) {
	if opts == nil {
		opts = &Options{}
	}
	r := &Runner{
		limits:   opts.Limits.merge(defaultLimits),
		workRoot: opts.WorkRoot,
		asRoot:   os.Geteuid() == 0,
		uid:      opts.UID,
		gid:      opts.GID,
		log:      opts.Logger,
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.workRoot == "" {
		r.workRoot = os.TempDir()
	}
	if r.uid == 0 {
		r.uid = 65534
	}
	if r.gid == 0 {
		r.gid = 65534
	}
	if r.uid < 0 || r.gid < 0 {
		return nil, fmt.Errorf("sandbox: Options.UID/GID %d/%d: must be positive host ids", r.uid, r.gid)
	}
	if err := r.checkWorkRoot(); err != nil {
		return nil, err
	}
	var err error
	if r.bwrap, err = lookTool(opts.Bwrap, "bwrap"); err != nil {
		return nil, fmt.Errorf("sandbox: %w: bubblewrap: %v; %s", ErrUnavailable, err, installHint)
	}
	if r.prlimit, err = lookTool(opts.Prlimit, "prlimit"); err != nil {
		return nil, fmt.Errorf("sandbox: %w: prlimit: %v; %s", ErrUnavailable, err, installHint)
	}
	// prlimit runs inside the sandbox, which sees /usr only.
	if !visibleInside(r.prlimit) {
		return nil, fmt.Errorf("sandbox: %w: prlimit at %s is outside /usr, so the sandbox cannot run it; install util-linux's prlimit under /usr", ErrUnavailable, r.prlimit)
	}
	r.fsArgs = hostFSArgs()
	if r.seccomp, err = seccompFilter(); err != nil {
		return nil, fmt.Errorf("sandbox: %w: %v", ErrUnavailable, err)
	}
	if opts.MaxRuns < 0 {
		return nil, fmt.Errorf("sandbox: Options.MaxRuns %d: must be positive", opts.MaxRuns)
	}
	r.slots = make(chan struct{}, cmp.Or(opts.MaxRuns, 4))
	if opts.NoCgroup {
		r.cgNote = "Options.NoCgroup is set"
	} else if cg, err := findCgroups(opts.CgroupParent); err == nil {
		r.cg = cg
	} else if opts.CgroupParent != "" {
		return nil, fmt.Errorf("sandbox: %w: %v", ErrUnavailable, err)
	} else {
		r.cgNote = err.Error()
	}
	if err := r.probe(); err != nil {
		return nil, err
	}
	r.log.Debug("sandbox: ready", "budget", r.Budget())
	return r, nil
}

// Budget says how a run's memory and processes are bounded on this machine,
// for the operator's log: by a control group (one budget for the whole run)
// or by per-process limits only, and why.
func (r *Runner) Budget() string {
	switch {
	case r.cg == nil:
		return "per-process limits only (RLIMIT_AS, RLIMIT_NPROC); no control group: " + r.cgNote
	case r.cg.v2 != "":
		return "one budget per run: cgroup v2 under " + r.cg.v2
	}
	return "one budget per run: cgroup v1 under " + r.cg.mem + " and " + r.cg.pids
}

// checkWorkRoot makes sure that bwrap, running as the sandbox's uid, can
// reach the work directories to mount them.
func (r *Runner) checkWorkRoot() error {
	abs, err := filepath.Abs(r.workRoot)
	if err != nil {
		return fmt.Errorf("sandbox: Options.WorkRoot %s: %w", r.workRoot, err)
	}
	r.workRoot = abs
	for d := abs; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("sandbox: Options.WorkRoot %s: %w", abs, err)
		}
		if !st.IsDir() {
			return fmt.Errorf("sandbox: Options.WorkRoot %s: %s is not a directory", abs, d)
		}
		if r.asRoot && !searchable(st, r.uid, r.gid) {
			return fmt.Errorf("sandbox: %w: Options.WorkRoot %s: %s is not searchable by uid %d, which the sandbox runs as; use a directory such as /tmp, or chmod o+x it", ErrUnavailable, abs, d, r.uid)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// searchable reports whether uid, with gid as its only group, may search the
// directory st.
func searchable(st fs.FileInfo, uid, gid int) bool {
	m := st.Mode().Perm()
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		switch {
		case int(s.Uid) == uid:
			return m&0o100 != 0
		case int(s.Gid) == gid:
			return m&0o010 != 0
		}
	}
	return m&0o001 != 0
}

// lookTool resolves a tool to an absolute path without symbolic links.
func lookTool(path, name string) (string, error) {
	if path == "" {
		path = name
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", err
	}
	if p, err = filepath.Abs(p); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

// probe runs a trivial command through the whole machinery.
func (r *Runner) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.run(ctx, job{argv: []string{r.prlimit, "--version"}, limits: r.limits, label: "probe"})
	if err != nil {
		return fmt.Errorf("sandbox: %w: %v; %s", ErrUnavailable, err, installHint)
	}
	if res.ExitCode != 0 || res.Reason != "" {
		return fmt.Errorf("sandbox: %w: a trivial sandboxed command failed (exit %d%s): %s; %s",
			ErrUnavailable, res.ExitCode, reasonSuffix(res.Reason), strings.TrimSpace(string(res.Stderr)), installHint)
	}
	return nil
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ", " + reason
}

// Run runs spec's script in a fresh sandbox and returns its result. A
// script that fails or exceeds a limit is not an error (see
// [Result.Reason]); errors are for a script that cannot be started
// ([ErrScriptNotFound], [ErrNoInterpreter], [ErrSkillTooLarge]), a sandbox that
// cannot be set up ([ErrUnavailable]), or ctx being done before the script
// ended.
func (r *Runner) Run(ctx context.Context, spec Spec) (*Result, error) {
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	default:
		return nil, fmt.Errorf("sandbox: %s: %w: %d runs are in progress, the most this runner allows at once (Options.MaxRuns); try again when one has finished", spec.Script, ErrBusy, cap(r.slots))
	}
	argv, skillDir, err := r.resolve(spec)
	if err != nil {
		return nil, err
	}
	return r.run(ctx, job{
		skillDir: skillDir,
		argv:     argv,
		args:     spec.Args,
		stdin:    spec.Stdin,
		limits:   spec.Limits.merge(r.limits),
		label:    spec.Script,
	})
}

// job is a resolved run: what to mount and what to execute inside.
type job struct {
	skillDir string
	argv     []string // executable inside the sandbox and its leading arguments
	args     []string
	stdin    []byte
	limits   Limits
	label    string // for messages
}

// stopCause is the context cause recording why we stopped a run.
type stopCause struct{ reason string }

func (c *stopCause) Error() string { return "sandbox stopped: " + c.reason }

func (r *Runner) run(ctx context.Context, j job) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: %s: %w", j.label, err)
	}
	ws, err := r.newWorkspace(j)
	if err != nil {
		return nil, err
	}
	defer ws.remove()

	args := r.bwrapArgs(j, ws)
	r.log.Debug("sandbox: run", "script", j.label, "argv", append([]string{r.bwrap}, args...))
	// bwrap reads options from --args but takes the command from its own
	// command line, which shows only paths inside the sandbox.
	sep := slices.Index(args, "--")
	argsFile, err := memFile("skillport-bwrap-args", []byte(strings.Join(args[:sep], "\x00")+"\x00"))
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s: %w", j.label, err)
	}
	ws.files = append(ws.files, argsFile)

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	runCtx, cancelTimer := context.WithTimeoutCause(runCtx, j.limits.WallClock, &stopCause{ReasonTimeout})
	defer cancelTimer()

	cmd := exec.CommandContext(runCtx, r.bwrap, append([]string{"--args", strconv.Itoa(2 + len(ws.files))}, args[sep:]...)...)
	cmd.Env = []string{} // bwrap itself gets nothing of ours either
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(j.stdin)
	out := &capture{limit: j.limits.OutputBytes, onLimit: func() { stop(&stopCause{ReasonOutput}) }}
	cmd.Stdout = out.writer(&out.stdout)
	cmd.Stderr = out.writer(&out.stderr)
	cmd.ExtraFiles = ws.files
	cmd.SysProcAttr = r.sysProcAttr()
	// bwrap is its process group's leader; its sandbox dies with it
	// (--die-with-parent, and the pid namespace's init takes everything
	// with it).
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second

	var group *runGroup
	if r.cg != nil {
		// bwrap's own process counts too, outside the run's user namespace.
		gl := j.limits
		gl.Processes++
		if group, err = r.cg.create(gl); err != nil {
			return nil, fmt.Errorf("sandbox: %s: %w: %v", j.label, ErrUnavailable, err)
		}
		defer func() {
			if err := group.remove(); err != nil {
				r.log.Warn("sandbox: control group left behind", "err", err)
			}
		}()
	}

	start := time.Now()
	if group != nil {
		err = group.start(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s: %w: starting %s: %v", j.label, ErrUnavailable, r.bwrap, err)
	}
	ws.closeFiles()
	watchDone := make(chan struct{})
	var wg sync.WaitGroup
	workErr := ws.openWork(runCtx)
	killed := false
	if workErr == nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws.watch(watchDone, j.limits, func() { stop(&stopCause{ReasonDisk}) })
		}()
	} else if runCtx.Err() == nil {
		// The script must not run with a /work we cannot see. (When bwrap
		// has already failed on its own, its exit status says why.)
		killed = cmd.Cancel() == nil
	}
	waitErr := cmd.Wait()
	close(watchDone)
	wg.Wait()
	res := &Result{Duration: time.Since(start)}

	var cause *stopCause
	stoppedByUs := errors.As(context.Cause(runCtx), &cause)
	if !stoppedByUs && ctx.Err() != nil {
		return nil, fmt.Errorf("sandbox: %s: %w", j.label, ctx.Err())
	}
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
		res.ExitCode = 0
	case errors.As(waitErr, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case errors.Is(waitErr, exec.ErrWaitDelay):
		res.ExitCode = cmd.ProcessState.ExitCode()
	default:
		return nil, fmt.Errorf("sandbox: %s: %w", j.label, waitErr)
	}
	res.Stdout, res.Stderr, res.Truncated = out.result()
	if !stoppedByUs && res.ExitCode == 1 && bytes.HasPrefix(res.Stderr, []byte("bwrap: ")) {
		// bwrap reports its own setup failures this way; the script never ran.
		return nil, fmt.Errorf("sandbox: %s: %w: %s", j.label, ErrUnavailable, strings.TrimSpace(string(res.Stderr)))
	}
	if killed && res.ExitCode == -1 && !stoppedByUs {
		return nil, fmt.Errorf("sandbox: %s: %w: %v", j.label, ErrUnavailable, workErr)
	}
	if stoppedByUs {
		res.ExitCode = -1
	}
	var used usage
	if group != nil {
		used = group.usage()
		res.PeakMemoryBytes = used.peakMemory
	}
	res.Reason = reason(res, cause, used)
	res.Outputs, res.OutputsTruncated = ws.collect(j.limits)
	return res, nil
}

// reason names what ended the run. Messages about failed forks or
// allocations explain a kill or failure better than the limit that finally
// stopped it (a fork bomb usually also hits the output or time limit).
func reason(res *Result, cause *stopCause, used usage) string {
	if cause == nil && res.ExitCode == 0 {
		return ""
	}
	// What the control group recorded is a fact, not a guess.
	if used.oomKills > 0 {
		return ReasonMemory
	}
	if used.pidsRefused > 0 {
		return ReasonProcesses
	}
	if hint := failureHint(res.Stderr, res.Stdout); hint != "" {
		return hint
	}
	if cause != nil {
		return cause.reason
	}
	switch res.ExitCode - 128 {
	case int(syscall.SIGXCPU):
		return ReasonCPU
	case int(syscall.SIGXFSZ):
		return ReasonFileSize
	case int(syscall.SIGKILL), int(syscall.SIGSEGV), int(syscall.SIGBUS), int(syscall.SIGABRT), int(syscall.SIGTERM):
		return ReasonKilled
	}
	return ""
}

var (
	forkMarkers = [][]byte{
		[]byte("Cannot fork"), []byte("can't fork"), []byte("Can't fork"),
		[]byte("fork: retry"), []byte("fork: Resource temporarily unavailable"),
		[]byte("BlockingIOError: [Errno 11]"), []byte("pthread_create failed: Resource temporarily unavailable"),
		[]byte("can't start new thread"),
	}
	memoryMarkers = [][]byte{
		[]byte("MemoryError"), []byte("Cannot allocate memory"), []byte("Out of memory"),
		[]byte("out of memory"), []byte("std::bad_alloc"), []byte("memory exhausted"),
		[]byte("Failed to allocate"),
	}
	fileSizeMarkers = [][]byte{[]byte("File too large")}
)

func failureHint(outs ...[]byte) string {
	for _, b := range outs {
		for _, m := range forkMarkers {
			if bytes.Contains(b, m) {
				return ReasonProcesses
			}
		}
	}
	for _, b := range outs {
		for _, m := range memoryMarkers {
			if bytes.Contains(b, m) {
				return ReasonMemory
			}
		}
	}
	for _, b := range outs {
		for _, m := range fileSizeMarkers {
			if bytes.Contains(b, m) {
				return ReasonFileSize
			}
		}
	}
	return ""
}

// capture bounds stdout and stderr together.
type capture struct {
	mu             sync.Mutex
	limit, n       int64
	stdout, stderr bytes.Buffer
	truncated      bool
	onLimit        func()
}

type captureWriter struct {
	c   *capture
	buf *bytes.Buffer
}

func (c *capture) writer(buf *bytes.Buffer) captureWriter { return captureWriter{c, buf} }

// Write keeps what fits and discards the rest, so the copying goroutine never
// blocks the script while the kill is on its way.
func (w captureWriter) Write(p []byte) (int, error) {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - c.n
	keep := p
	if int64(len(keep)) > room {
		keep = keep[:room]
	}
	w.buf.Write(keep)
	c.n += int64(len(keep))
	if len(keep) < len(p) && !c.truncated {
		c.truncated = true
		c.onLimit()
	}
	return len(p), nil
}

func (c *capture) result() (stdout, stderr []byte, truncated bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.stdout.Bytes()), bytes.Clone(c.stderr.Bytes()), c.truncated
}
