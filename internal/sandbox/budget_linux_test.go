package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// budgetRunner is a runner that must have a control group: on this kind of
// machine (root with the cgroup v1 hierarchies, or a delegated v2 parent)
// one is available, and without it the run's budget is not what the
// package promises.
func budgetRunner(t *testing.T, opts *Options) *Runner {
	t.Helper()
	r := newRunner(t, opts)
	if r.cg == nil {
		t.Fatalf("no control group for the run's budget: %s (run as root with cgroup v1 memory and pids mounted, or set Options.CgroupParent to a delegated cgroup v2 directory)", r.Budget())
	}
	return r
}

// hogs is a script that forks n children that each fill mib MiB, the
// shape that reached 2.65 GB in one run with per-process limits only.
func hogs(n, mib int) string {
	return fmt.Sprintf(`import os, time
kids = []
for i in range(%d):
    pid = os.fork()
    if pid == 0:
        b = b"x" * (%d << 20)
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
bad = 0
for pid in kids:
    _, status = os.waitpid(pid, 0)
    if status != 0:
        bad += 1
print("failed", bad, flush=True)
os._exit(1 if bad else 0)
`, n, mib)
}

// Eight processes of 400 MiB each fit every per-process limit, but not the
// run's budget of 512 MiB: the kernel holds the run as a whole to it.
func TestRunMemoryBudget(t *testing.T) {
	r := budgetRunner(t, nil)
	const budget = 512 << 20
	res := run(t, r, "hogs.py", hogs(8, 400), Spec{Limits: Limits{MemoryBytes: budget, WallClock: 60 * time.Second}})
	if res.Reason != ReasonMemory {
		t.Errorf("reason %q, want %q (stdout %q, stderr %.300s)", res.Reason, ReasonMemory, res.Stdout, res.Stderr)
	}
	if res.PeakMemoryBytes <= 0 || res.PeakMemoryBytes > budget {
		t.Errorf("the run held %d MiB at its peak; the budget is %d MiB", res.PeakMemoryBytes>>20, budget>>20)
	}
	// Within the budget the same shape runs to the end.
	res = run(t, r, "hogs.py", hogs(2, 100), Spec{Limits: Limits{MemoryBytes: budget, WallClock: 60 * time.Second}})
	if res.Failed() || !strings.Contains(string(res.Stdout), "failed 0") {
		t.Errorf("2 x 100 MiB within a 512 MiB budget: exit %d, reason %q, stdout %q, stderr %.300s", res.ExitCode, res.Reason, res.Stdout, res.Stderr)
	}
	if res.PeakMemoryBytes < 200<<20 {
		t.Errorf("peak %d MiB for 2 x 100 MiB: the control group does not see the run", res.PeakMemoryBytes>>20)
	}
}

// A fork bomb meets the run's process budget, counted by the control group
// as well as by RLIMIT_NPROC, and the reason is what the kernel recorded.
func TestRunProcessBudget(t *testing.T) {
	r := budgetRunner(t, nil)
	// The script stays alive while the bomb grows: were it to exit at once,
	// the sandbox would end before the orphans reached the budget, and how
	// far they got would depend on the machine's load.
	res := run(t, r, "bomb.sh", "bomb() { bomb | bomb & }\nbomb\nsleep 3\nexit 3\n", Spec{Limits: Limits{Processes: 24, WallClock: 10 * time.Second}})
	if res.Reason != ReasonProcesses {
		t.Errorf("reason %q, want %q (stderr %.300s)", res.Reason, ReasonProcesses, res.Stderr)
	}
}

// Runs beyond Options.MaxRuns are refused at once with ErrBusy, and a slot
// frees when a run ends.
func TestMaxRuns(t *testing.T) {
	r := newRunner(t, &Options{MaxRuns: 2})
	dir := makeSkill(t, map[string]file{"wait.sh": {content: "while [ ! -e /tmp/never ]; do sleep 0.1; done\n"}, "ok.sh": {content: "echo ok\n"}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Run(ctx, Spec{SkillDir: dir, Script: "wait.sh"})
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(r.slots) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the two runs did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	_, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: "ok.sh"})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "MaxRuns") {
		t.Errorf("third run: %v; want ErrBusy naming Options.MaxRuns", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the refusal took %v; it must not wait", d)
	}
	cancel()
	wg.Wait()
	res, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: "ok.sh"})
	if err != nil || string(res.Stdout) != "ok\n" {
		t.Errorf("after the runs ended: %v, %+v", err, res)
	}
}

// Every system call the filter denies fails with the documented errno, and
// what ordinary scripts do (processes, threads, subprocesses) still works.
func TestSeccomp(t *testing.T) {
	r := newRunner(t, nil)
	calls := []struct {
		name  string
		nr    uintptr
		args  string
		errno unix.Errno
	}{
		// Each of these succeeds, or fails otherwise, without the filter.
		{"ptrace", unix.SYS_PTRACE, "0, 0, 0, 0", unix.EPERM}, // PTRACE_TRACEME
		{"unshare", unix.SYS_UNSHARE, "0", unix.EPERM},
		{"unshare user", unix.SYS_UNSHARE, fmt.Sprint(unix.CLONE_NEWUSER), unix.EPERM},
		{"clone newns", unix.SYS_CLONE, fmt.Sprint(unix.CLONE_NEWNS | 17), unix.EPERM},
		{"clone3", unix.SYS_CLONE3, "0, 0", unix.ENOSYS},
		{"keyctl", unix.SYS_KEYCTL, "0, -3, 0", unix.EPERM}, // KEYCTL_GET_KEYRING_ID session
		{"add_key", unix.SYS_ADD_KEY, "0, 0, 0, 0, 0", unix.EPERM},
		{"bpf", unix.SYS_BPF, "0, 0, 0", unix.EPERM},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, "0, 0, -1, -1, 0", unix.EPERM},
		{"mount", unix.SYS_MOUNT, "0, 0, 0, 0, 0", unix.EPERM},
		{"umount2", unix.SYS_UMOUNT2, "0, 0", unix.EPERM},
		{"fsopen", unix.SYS_FSOPEN, "0, 0", unix.EPERM},
		{"setns", unix.SYS_SETNS, "-1, 0", unix.EPERM},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, "0, 0", unix.EPERM},
		{"userfaultfd", unix.SYS_USERFAULTFD, "0", unix.EPERM},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, "1, 0, 0, 0, 0, 0", unix.EPERM},
		{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, "0, 0, 0", unix.EPERM},
		{"kexec_load", unix.SYS_KEXEC_LOAD, "0, 0, 0, 0", unix.EPERM},
		{"init_module", unix.SYS_INIT_MODULE, "0, 0, 0", unix.EPERM},
		{"ioctl TIOCSTI", unix.SYS_IOCTL, fmt.Sprintf("0, %d, 0", unix.TIOCSTI), unix.EPERM},
	}
	if abiBit != 0 {
		calls = append(calls, struct {
			name  string
			nr    uintptr
			args  string
			errno unix.Errno
		}{"x32 getpid", abiBit | unix.SYS_GETPID, "", unix.EPERM})
	}
	var script strings.Builder
	script.WriteString(`import ctypes, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, nr, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    print(name, rc, ctypes.get_errno() if rc == -1 else 0)
`)
	for _, c := range calls {
		fmt.Fprintf(&script, "call(%q, %d%s)\n", c.name, c.nr, map[bool]string{true: ", " + c.args, false: ""}[c.args != ""])
	}
	script.WriteString(`t = threading.Thread(target=lambda: None); t.start(); t.join()
print("subprocess", subprocess.run(["echo", "child"], capture_output=True).stdout.decode().strip())
print(open("/proc/self/status").read().split("Seccomp:")[1].split()[0])
`)
	res := run(t, r, "calls.py", script.String(), Spec{})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if len(lines) != len(calls)+2 {
		t.Fatalf("got %d lines for %d calls:\n%s\n%s", len(lines), len(calls), res.Stdout, res.Stderr)
	}
	for i, c := range calls {
		if want := fmt.Sprintf("%s -1 %d", c.name, c.errno); lines[i] != want {
			t.Errorf("%s: got %q, want %q (%v)", c.name, lines[i], want, c.errno)
		}
	}
	if got := lines[len(calls)]; got != "subprocess child" {
		t.Errorf("an ordinary subprocess: %q", got)
	}
	if got := lines[len(calls)+1]; got != "2" {
		t.Errorf("Seccomp mode %q, want 2 (filter)", got)
	}
}

// Nothing of the host's paths shows through /proc: not bwrap's command line
// (pid 1), not any environment, not the mount table (the skill and /work are
// built inside the sandbox, not bound from the host).
func TestNoHostPathsInProc(t *testing.T) {
	root := reachableDir(t)
	r := newRunner(t, &Options{WorkRoot: root})
	dir := makeSkill(t, map[string]file{"look.sh": {content: `for f in /proc/1/cmdline /proc/1/environ /proc/self/environ /proc/self/cmdline /proc/$$/cmdline; do
  echo "== $f"; tr '\0' ' ' <$f; echo
done
`}, "mounts.sh": {content: "cat /proc/self/mountinfo\n"}})
	res, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: "look.sh"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	cwd, _ := os.Getwd()
	for _, host := range []string{root, dir, filepath.Dir(dir), cwd, "skillport-run-", os.TempDir() + "/"} {
		if strings.Contains(string(res.Stdout), host) {
			t.Errorf("the sandbox sees the host path %s:\n%s", host, res.Stdout)
		}
	}
	// The skill is recreated inside the sandbox's own root and /work is a
	// tmpfs of its own: neither is mounted from the host.
	mounts, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: "mounts.sh"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mounts.Stdout), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], "/skill") {
			t.Errorf("/skill is a mount from the host: %s", l)
		}
		if f := strings.Fields(l); len(f) > 4 && f[4] == "/work" && f[3] != "/" {
			t.Errorf("/work is bound from the host directory %s: %s", f[3], l)
		}
	}
	for _, host := range []string{root, dir, filepath.Dir(dir), cwd, "skillport-run-", os.TempDir() + "/"} {
		if strings.Contains(string(mounts.Stdout), host) {
			t.Errorf("the sandbox's mountinfo shows the host path %s:\n%s", host, mounts.Stdout)
		}
	}
	if !strings.Contains(string(mounts.Stdout), " /work ") {
		t.Errorf("mountinfo without /work; the check above reads the wrong file:\n%s", mounts.Stdout)
	}
	if !strings.Contains(string(res.Stdout), "== /proc/1/cmdline\n/usr/bin/bwrap --args ") {
		t.Errorf("pid 1 should show only bwrap reading its options from a descriptor:\n%s", res.Stdout)
	}
}

// A skill of as many files as the default limit allows reaches the sandbox
// whole (each is handed over as its own descriptor), and one beyond what
// bubblewrap takes is refused, not half-built.
func TestManySkillFiles(t *testing.T) {
	r := newRunner(t, nil)
	files := map[string]file{"count.sh": {content: "ls /skill/d | wc -l; cat /skill/d/f1997\n"}}
	for i := range 1998 {
		files[fmt.Sprintf("d/f%d", i)] = file{content: fmt.Sprint(i)}
	}
	res, err := r.Run(context.Background(), Spec{SkillDir: makeSkill(t, files), Script: "count.sh"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() || string(res.Stdout) != "1998\n1997" {
		t.Fatalf("exit %d, stdout %q, stderr %.300s", res.ExitCode, res.Stdout, res.Stderr)
	}
	files["d/one-more"] = file{content: "x"}
	delete(files, "count.sh")
	for i := range 1000 {
		files[fmt.Sprintf("e/f%d", i)] = file{content: "x"}
	}
	files["count.sh"] = file{content: "true\n"}
	_, err = r.Run(context.Background(), Spec{SkillDir: makeSkill(t, files), Script: "count.sh", Limits: Limits{SkillFiles: 5000}})
	if !errors.Is(err, ErrSkillTooLarge) || !strings.Contains(err.Error(), "bubblewrap") {
		t.Fatalf("3000 files: %v; want ErrSkillTooLarge naming bubblewrap's limit", err)
	}
}

// A CgroupParent that cannot hold run groups is a configuration error, not a
// silent fallback to per-process limits; NoCgroup is reported as such.
func TestCgroupOptions(t *testing.T) {
	parent := t.TempDir()
	_, err := New(&Options{CgroupParent: parent})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "Options.CgroupParent "+parent) {
		t.Errorf("New with a plain directory as CgroupParent: %v; want ErrUnavailable naming it", err)
	}
	r := newRunner(t, &Options{NoCgroup: true})
	if r.cg != nil || !strings.Contains(r.Budget(), "per-process limits only") || !strings.Contains(r.Budget(), "NoCgroup") {
		t.Errorf("Budget with NoCgroup: %q", r.Budget())
	}
}

// /work is a tmpfs whose own size stops a script that writes faster than
// the watch looks: it never holds more than twice Limits.WorkDirBytes, and
// what was written is still returned.
func TestWorkTmpfsBounded(t *testing.T) {
	r := newRunner(t, nil)
	const limit = 1 << 20
	dir := makeSkill(t, map[string]file{"fill.sh": {content: "head -c 8000000 /dev/zero > big; echo done\n"}})
	res, err := r.Run(context.Background(), Spec{SkillDir: dir, Script: "fill.sh", Limits: Limits{WorkDirBytes: limit, FileSizeBytes: 64 << 20, OutputFileBytes: 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 1 || res.Outputs[0].Path != "big" {
		t.Fatalf("outputs %+v; want the partly written big (exit %d, %s, stderr %q)", res.Outputs, res.ExitCode, res.Reason, res.Stderr)
	}
	if got := res.Outputs[0].Size; got > 2*limit || got == 0 {
		t.Errorf("/work held a %d-byte file; the tmpfs should stop it at %d", got, 2*limit)
	}
	if res.Reason != ReasonDisk && !strings.Contains(string(res.Stderr), "No space left on device") {
		t.Errorf("reason %q, stderr %q: want the disk limit or ENOSPC", res.Reason, res.Stderr)
	}
}
