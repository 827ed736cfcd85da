package sandbox

import (
	"errors"
	"log/slog"
	"time"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrUnavailable is returned by [New] when bubblewrap or prlimit is
	// missing or cannot build a sandbox on this machine, and by [Runner.Run]
	// when bwrap fails to set one up. Callers must then refuse to run the
	// script; nothing is ever run outside the sandbox.
	ErrUnavailable = errors.New("sandbox unavailable")
	// ErrScriptNotFound is returned when [Spec.Script] does not name a
	// regular file inside [Spec.SkillDir]: missing, a directory, absolute,
	// containing "..", or reached through a symbolic link that leads out.
	ErrScriptNotFound = errors.New("script not found in skill")
	// ErrNoInterpreter is returned when a script has no "#!" line, no known
	// extension and no execute bit, or names an interpreter that does not
	// exist inside the sandbox.
	ErrNoInterpreter = errors.New("no interpreter for script")
	// ErrBusy is returned by [Runner.Run] when [Options.MaxRuns] runs are
	// already in progress; the caller may retry later. Nothing was started.
	ErrBusy = errors.New("sandbox busy")
	// ErrSkillTooLarge is returned when the skill directory, which is
	// copied for each run, exceeds [Limits.SkillFiles] or [Limits.SkillBytes].
	ErrSkillTooLarge = errors.New("skill too large to run")
)

// Reasons a run ended early, reported in [Result.Reason]. A run that ended on
// its own has an empty Reason, whatever its exit code.
const (
	// ReasonTimeout: the run exceeded [Limits.WallClock] and was killed.
	ReasonTimeout = "timeout"
	// ReasonCPU: the script exceeded [Limits.CPUTime] (SIGXCPU).
	ReasonCPU = "cpu"
	// ReasonMemory: the script failed because [Limits.MemoryBytes] refused
	// an allocation (recognised from its error output; best-effort).
	ReasonMemory = "memory"
	// ReasonProcesses: the script failed to fork because of
	// [Limits.Processes] (recognised from its error output; best-effort).
	ReasonProcesses = "processes"
	// ReasonOutput: stdout and stderr together exceeded
	// [Limits.OutputBytes]; the sandbox was killed and the output cut.
	ReasonOutput = "output limit"
	// ReasonFileSize: the script wrote a file past [Limits.FileSizeBytes]
	// (SIGXFSZ).
	ReasonFileSize = "file size"
	// ReasonDisk: the work directory grew past [Limits.WorkDirBytes] or
	// [Limits.WorkDirFiles] and the sandbox was killed.
	ReasonDisk = "disk"
	// ReasonKilled: the script died from a signal not explained above.
	ReasonKilled = "killed"
)

// Limits bound one run. A zero field means the runner's default (see
// [Options.Limits]), and a zero there means the package default noted on
// each field. There is no way to ask for "unlimited".
type Limits struct {
	// WallClock is the real time a run may take, sandbox setup included.
	// Default 30s.
	WallClock time.Duration
	// CPUTime is the CPU time each process may use (RLIMIT_CPU, whole
	// seconds, rounded up). Default 10s.
	CPUTime time.Duration
	// MemoryBytes is the run's memory budget: with a control group (see
	// the package documentation) everything the run's processes hold
	// together, files in /tmp included, after which the kernel's OOM killer
	// ends a process of the run (ReasonMemory). It is also each process's
	// address space (RLIMIT_AS), the only bound without a control group,
	// where a run may then hold up to Processes times this much. Default
	// 512 MiB.
	MemoryBytes int64
	// Processes is how many processes (and threads) the run may hold at
	// once, its init process included: RLIMIT_NPROC in the run's own user
	// namespace, and the control group's pids.max. Default 64.
	Processes int
	// OutputBytes bounds stdout and stderr together. Default 1 MiB.
	OutputBytes int64
	// FileSizeBytes is the largest file a script may write (RLIMIT_FSIZE).
	// Default 16 MiB.
	FileSizeBytes int64
	// WorkDirBytes bounds the work directory's total size, watched while
	// the script runs. Default 64 MiB.
	WorkDirBytes int64
	// WorkDirFiles bounds how many entries the work directory may hold
	// while the script runs. Default 4096.
	WorkDirFiles int
	// OutputFiles is how many files of the work directory are returned.
	// Default 32.
	OutputFiles int
	// OutputFileBytes bounds the bytes of those files returned, all files
	// together. Default 8 MiB.
	OutputFileBytes int64
	// TmpBytes is the size of the tmpfs mounted at /tmp. Default 64 MiB.
	TmpBytes int64
	// SkillFiles and SkillBytes bound the skill directory copied into the
	// sandbox (entries, and bytes of regular files). Default 2000 and 64 MiB.
	// bubblewrap recreates each entry from its own argument, which caps
	// SkillFiles near 2800 whatever is asked ([ErrSkillTooLarge] beyond).
	SkillFiles int
	SkillBytes int64
}

var defaultLimits = Limits{
	WallClock:       30 * time.Second,
	CPUTime:         10 * time.Second,
	MemoryBytes:     512 << 20,
	Processes:       64,
	OutputBytes:     1 << 20,
	FileSizeBytes:   16 << 20,
	WorkDirBytes:    64 << 20,
	WorkDirFiles:    4096,
	OutputFiles:     32,
	OutputFileBytes: 8 << 20,
	TmpBytes:        64 << 20,
	SkillFiles:      2000,
	SkillBytes:      64 << 20,
}

// DefaultLimits returns the package defaults, the values a zero [Limits]
// field stands for.
func DefaultLimits() Limits { return defaultLimits }

// merge fills l's zero fields from d.
func (l Limits) merge(d Limits) Limits {
	pick := func(a, b int64) int64 {
		if a > 0 {
			return a
		}
		return b
	}
	return Limits{
		WallClock:       time.Duration(pick(int64(l.WallClock), int64(d.WallClock))),
		CPUTime:         time.Duration(pick(int64(l.CPUTime), int64(d.CPUTime))),
		MemoryBytes:     pick(l.MemoryBytes, d.MemoryBytes),
		Processes:       int(pick(int64(l.Processes), int64(d.Processes))),
		OutputBytes:     pick(l.OutputBytes, d.OutputBytes),
		FileSizeBytes:   pick(l.FileSizeBytes, d.FileSizeBytes),
		WorkDirBytes:    pick(l.WorkDirBytes, d.WorkDirBytes),
		WorkDirFiles:    int(pick(int64(l.WorkDirFiles), int64(d.WorkDirFiles))),
		OutputFiles:     int(pick(int64(l.OutputFiles), int64(d.OutputFiles))),
		OutputFileBytes: pick(l.OutputFileBytes, d.OutputFileBytes),
		TmpBytes:        pick(l.TmpBytes, d.TmpBytes),
		SkillFiles:      int(pick(int64(l.SkillFiles), int64(d.SkillFiles))),
		SkillBytes:      pick(l.SkillBytes, d.SkillBytes),
	}
}

// Spec is one script to run.
type Spec struct {
	// SkillDir is the host path of the skill directory. It is mounted
	// read-only at /skill.
	SkillDir string
	// Script is the script's path relative to SkillDir, with "/"
	// separators, e.g. "scripts/extract.py".
	Script string
	// Args are passed to the script after its path.
	Args []string
	// Stdin is the script's standard input; nil means empty.
	Stdin []byte
	// Limits override the runner's for this run, field by field.
	Limits Limits
}

// Output is a file the script left in its work directory.
type Output struct {
	// Path is relative to the work directory, with "/" separators.
	Path string
	// Size is the file's size on disk.
	Size int64
	// Data is the file's content, cut when Truncated.
	Data []byte
	// MIMEType comes from the extension, else from sniffing Data.
	MIMEType string
	// Truncated reports that Data holds less than Size bytes because
	// [Limits.OutputFileBytes] was reached.
	Truncated bool
}

// Result is the outcome of a run that the sandbox set up. A script that
// failed or hit a limit still yields a Result; see Reason.
type Result struct {
	// ExitCode is the script's exit status, 128+n if it died from signal n,
	// or -1 if the sandbox was killed from outside (timeout, output or disk
	// limit).
	ExitCode int
	// Stdout and Stderr hold what the script printed, at most
	// [Limits.OutputBytes] together.
	Stdout, Stderr []byte
	// Truncated reports that output was cut at [Limits.OutputBytes].
	Truncated bool
	// Outputs are the regular files left in the work directory, in
	// lexical order; symbolic links and other special files are skipped.
	Outputs []Output
	// OutputsTruncated reports that files were left out or cut because of
	// [Limits.OutputFiles] or [Limits.OutputFileBytes].
	OutputsTruncated bool
	// PeakMemoryBytes is the most memory the run held at once, as its
	// control group recorded; 0 without one.
	PeakMemoryBytes int64
	// Duration is the run's wall-clock time.
	Duration time.Duration
	// Reason names the limit that ended the run (one of the Reason
	// constants), or is empty.
	Reason string
}

// Failed reports whether the run should be reported as a failed script:
// a non-zero exit status or a limit reached.
func (r *Result) Failed() bool { return r.ExitCode != 0 || r.Reason != "" }

// Options configure a [Runner]. The zero value is usable.
type Options struct {
	// Bwrap is the bubblewrap binary; empty means "bwrap" on $PATH.
	Bwrap string
	// Prlimit is util-linux's prlimit, which must live under /usr so the
	// sandbox can see it; empty means "prlimit" on $PATH.
	Prlimit string
	// Limits are the defaults for every run; zero fields take the
	// package defaults ([DefaultLimits]).
	Limits Limits
	// WorkRoot is the host directory under which each run's private copy
	// of its skill is made; empty means os.TempDir(). (The work directory
	// itself is a tmpfs inside the sandbox.)
	WorkRoot string
	// UID and GID are the host ids the sandbox runs as when the caller is
	// root; zero means 65534 ("nobody"). They cannot be 0: the kernel does
	// not enforce the process limit for root. Ignored for a non-root caller.
	UID, GID int
	// MaxRuns is how many runs may be in progress at once; Run returns
	// [ErrBusy] beyond it rather than queue. With a control group the
	// machine-wide bound on scripts' memory is MaxRuns times
	// [Limits.MemoryBytes]. Zero means 4.
	MaxRuns int
	// CgroupParent is a delegated cgroup v2 directory (writable by the
	// caller, with "+memory +pids" in its cgroup.subtree_control, e.g. a
	// systemd unit's with Delegate=yes) under which each run gets its own
	// group. Empty means the cgroup v1 memory and pids hierarchies when they
	// are mounted and writable (root), else no control group.
	CgroupParent string
	// NoCgroup runs without a control group even where one is available:
	// then only the per-process limits bound a run (see [Limits.MemoryBytes]).
	NoCgroup bool
	// Logger receives the bwrap command line of each run at debug level;
	// nil means slog.Default().
	Logger *slog.Logger
}

// Runner runs scripts in sandboxes. It is safe for concurrent use.
type Runner struct {
	bwrap, prlimit string
	limits         Limits
	workRoot       string
	asRoot         bool
	uid, gid       int
	fsArgs         []string
	seccomp        []byte // the filter's raw instructions
	log            *slog.Logger
	cg             *cgroups      // nil: no control group
	cgNote         string        // why not, for Budget
	slots          chan struct{} // one per run in progress, MaxRuns deep
}

// MaxRuns is how many runs may be in progress at once ([Options.MaxRuns]
// or its default), for the operator's log: with a control group it sets
// the machine-wide bound on scripts' memory.
func (r *Runner) MaxRuns() int { return cap(r.slots) }
