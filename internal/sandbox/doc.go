// Package sandbox runs one script of a skill inside a bubblewrap (bwrap)
// sandbox. It backs the seed-001 "skills/execute" compatibility method, which
// a server offers only when its operator enables scripts.
//
// There is no unsandboxed path: [New] runs a trivial sandboxed command first
// and returns an error wrapping [ErrUnavailable] when bwrap or prlimit is
// missing or cannot set the sandbox up; callers then refuse execution. The
// package builds on every OS, but off Linux (no bubblewrap) [New] always
// returns [ErrUnavailable].
//
// # What a script sees
//
// Every run gets fresh namespaces (user, mount, pid, network, ipc, uts,
// cgroup where possible) and:
//
//   - no network: only a loopback interface of its own;
//   - a read-only view of /usr (with /bin, /sbin, /lib* as on the host), a
//     few files under /etc that interpreters need (/etc/alternatives, the
//     dynamic linker's cache, /etc/perl, /etc/python3*), and a synthetic
//     /etc/passwd, /etc/group and /etc/hosts; nothing of /root, /home, the
//     host's /tmp, /etc/shadow or the caller's working directory;
//   - a read-only copy of the skill directory at /skill;
//   - a fresh, empty, writable work directory at /work, which is the working
//     directory and $HOME: a tmpfs of the sandbox's own, of at most twice
//     [Limits.WorkDirBytes], which we open through /proc/PID/root before the
//     script starts; files left there are returned in [Result.Outputs] and
//     the tmpfs is freed when the run's descriptor to it is closed;
//   - a small size-bounded tmpfs at /tmp; everything else is read-only;
//   - a fresh /proc and a minimal /dev;
//   - an environment of exactly PATH, HOME, LANG and TMPDIR;
//   - uid/gid 65534, no capabilities, no_new_privs, its own session, and no
//     way to create further user namespaces;
//   - a seccomp filter, assembled in Go and handed to bwrap's --seccomp,
//     that denies the system calls listed at deniedSyscalls (ptrace, mount,
//     unshare, setns, keyctl, bpf, perf_event_open, io_uring, module and
//     kexec calls, namespace flags on clone, ...) with EPERM;
//   - nothing of the host's paths in /proc/1/cmdline (bwrap reads its
//     options from a descriptor), in any environment, or in the mount table:
//     /skill is recreated file by file in the sandbox's own root and /work
//     is a tmpfs, so nothing under [Options.WorkRoot] is mounted;
//   - resource limits set by prlimit(1) just before the script starts:
//     address space, CPU seconds, processes, file size, open files, no core
//     dumps.
//
// # One budget per run
//
// Where a control group is available, each run gets its own: its
// memory.max (memory.limit_in_bytes on cgroup v1) is [Limits.MemoryBytes]
// and its pids.max [Limits.Processes], for all the run's processes
// together, files in its /tmp and /work included. bwrap is placed in the group before
// it starts anything (CLONE_INTO_CGROUP on v2; on v1 it is forked from a
// thread that is in the group at that moment), so nothing of the run
// escapes it. The group comes from [Options.CgroupParent] (a delegated
// cgroup v2 directory) or, by default, from the cgroup v1 memory and pids
// hierarchies when they are mounted and the caller may write them (root).
// [Runner.Budget] says which applies. When the OOM killer or pids.max
// stopped something, [Result.Reason] says so from the group's counters.
//
// Without a control group only per-process limits apply: a run may hold
// up to Processes × MemoryBytes of address space. In both cases at most
// [Options.MaxRuns] runs are in progress at once (more get [ErrBusy]), so
// the machine-wide bound with a control group is MaxRuns × MemoryBytes.
//
// # Process-count limit and the caller's uid
//
// The kernel does not enforce RLIMIT_NPROC for the global root user, even
// inside a user namespace that maps to it. When the caller runs as root the
// sandbox is therefore started inside a user namespace whose only uid maps to
// [Options.UID] (65534, "nobody", by default), so a fork bomb hits the limit.
// The process count is per user namespace, so concurrent runs do not share
// it. A non-root caller needs unprivileged user namespaces (the Debian
// default); the sandbox then runs under the caller's own uid.
//
// The skill directory is copied for each run (bounded by [Limits.SkillFiles]
// and [Limits.SkillBytes]) into a private directory under
// [Options.WorkRoot], readable by the sandbox's uid and group only; bwrap
// then rebuilds that copy at /skill inside the sandbox's own root file
// system (directories, links, and each file's content read from a
// descriptor we open), read-only, with only the execute bit kept. The copy
// pins the files that were checked. Symbolic links are copied as links:
// inside the sandbox they can only reach what the sandbox shows. Options.WorkRoot itself must be reachable by that uid
// (/tmp is); [New] checks.
//
// # How a script is started
//
// The script is named relative to the skill directory and must be a regular
// file inside it; os.Root resolves the name, so ".." or a symbolic link
// leading out is refused with [ErrScriptNotFound]. It is then started, in
// order of preference:
//
//  1. a "#!" line names the interpreter, which is run explicitly with the
//     line's optional argument and the script's path, exactly as the kernel
//     would, but without needing the execute bit (skills copied from archives
//     often lose it) or an exec-permitting mount;
//  2. otherwise the extension picks an interpreter found under /usr: .py
//     python3, .sh sh, .bash bash, .pl perl, .rb ruby, .js and .mjs node;
//  3. otherwise a file with the execute bit is executed directly (a binary);
//  4. otherwise [ErrNoInterpreter].
//
// # Limits
//
// Exceeding a limit is not an error: [Runner.Run] returns a [Result] whose
// Reason says which limit ended the run. Wall-clock time, output size and
// the work directory's size are watched from outside and end the run by
// killing the sandbox (its pid namespace dies with it); CPU time and file
// size are enforced by the kernel with SIGXCPU and SIGXFSZ; memory and
// process exhaustion make allocations and forks fail inside the script, and
// are recognised from the messages common runtimes print ("MemoryError",
// "Cannot fork", "File too large", ...), so those reasons are best-effort:
// they explain a failure, they never decide one.
package sandbox
