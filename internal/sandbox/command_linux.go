package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Where things live inside the sandbox.
const (
	skillMount = "/skill"
	workMount  = "/work"
	sandboxID  = "65534" // uid and gid inside; mapped to the caller or Options.UID
	sandboxEnv = "/usr/local/bin:/usr/bin:/bin"
)

// interpreters by extension, for scripts without a "#!" line.
var interpreters = map[string]string{
	".py":   "python3",
	".sh":   "sh",
	".bash": "bash",
	".pl":   "perl",
	".rb":   "ruby",
	".js":   "node",
	".mjs":  "node",
}

// resolve checks spec and returns the command to run inside the sandbox and
// the skill directory to mount.
func (r *Runner) resolve(spec Spec) (argv []string, skillDir string, err error) {
	if spec.SkillDir == "" {
		return nil, "", fmt.Errorf("sandbox: Spec.SkillDir is empty: %w", ErrScriptNotFound)
	}
	skillDir, err = filepath.Abs(spec.SkillDir)
	if err != nil {
		return nil, "", fmt.Errorf("sandbox: %s: %w", spec.SkillDir, err)
	}
	rel := filepath.FromSlash(spec.Script)
	if spec.Script == "" || !filepath.IsLocal(rel) || strings.ContainsRune(spec.Script, 0) {
		return nil, "", fmt.Errorf("sandbox: %s: script %q must be a relative path inside the skill, without \"..\": %w", skillDir, spec.Script, ErrScriptNotFound)
	}
	rel = filepath.Clean(rel)
	root, err := os.OpenRoot(skillDir)
	if err != nil {
		return nil, "", fmt.Errorf("sandbox: skill directory %s: %w", skillDir, err)
	}
	defer root.Close()
	st, err := root.Stat(rel)
	if err != nil {
		return nil, "", fmt.Errorf("sandbox: %s: script %q: %w (%v)", skillDir, spec.Script, ErrScriptNotFound, err)
	}
	if !st.Mode().IsRegular() {
		return nil, "", fmt.Errorf("sandbox: %s: script %q is a %s, not a regular file: %w", skillDir, spec.Script, kind(st.Mode()), ErrScriptNotFound)
	}
	// O_NONBLOCK: a file swapped for a named pipe must not hang us.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, "", fmt.Errorf("sandbox: %s: script %q: %w (%v)", skillDir, spec.Script, ErrScriptNotFound, err)
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	inside := skillMount + "/" + filepath.ToSlash(rel)
	argv, err = r.command(inside, head[:n], st)
	if err != nil {
		return nil, "", fmt.Errorf("sandbox: %s: script %q: %w", skillDir, spec.Script, err)
	}
	return argv, skillDir, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// command picks how to start the script at path inside (see the package
// documentation for the order).
func (r *Runner) command(inside string, head []byte, st fs.FileInfo) ([]string, error) {
	if interp, arg, ok := parseShebang(head); ok {
		if !path.IsAbs(interp) || !visibleInside(interp) {
			return nil, fmt.Errorf("%w: the \"#!\" line names %q, which does not exist inside the sandbox (only /usr, /bin, /sbin and /lib* are visible); use e.g. #!/usr/bin/env python3", ErrNoInterpreter, interp)
		}
		argv := []string{interp}
		if arg != "" {
			argv = append(argv, arg)
		}
		return append(argv, inside), nil
	}
	if name, ok := interpreters[strings.ToLower(path.Ext(inside))]; ok {
		p := findInside(name)
		if p == "" {
			return nil, fmt.Errorf("%w: %s is not installed under /usr", ErrNoInterpreter, name)
		}
		return []string{p, inside}, nil
	}
	if executable(st) {
		return []string{inside}, nil
	}
	return nil, fmt.Errorf("%w: no \"#!\" line, no known extension (%s) and not executable", ErrNoInterpreter, knownExtensions())
}

func knownExtensions() string {
	exts := make([]string, 0, len(interpreters))
	for e := range interpreters {
		exts = append(exts, e)
	}
	slices.Sort(exts)
	return strings.Join(exts, " ")
}

// parseShebang splits a "#!" line the way the kernel does: the interpreter,
// then everything after the following blanks as one optional argument.
func parseShebang(head []byte) (interp, arg string, ok bool) {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return "", "", false
	}
	line := head[2:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = bytes.Trim(line, " \t\r")
	if len(line) == 0 || bytes.IndexByte(line, 0) >= 0 {
		return "", "", false
	}
	if i := bytes.IndexAny(line, " \t"); i >= 0 {
		return string(line[:i]), string(bytes.Trim(line[i:], " \t")), true
	}
	return string(line), "", true
}

// visibleInside reports whether a host path is mounted in the sandbox and
// exists.
func visibleInside(p string) bool {
	p = path.Clean(p)
	ok := false
	for _, dir := range []string{"/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/"} {
		if strings.HasPrefix(p, dir) {
			ok = true
		}
	}
	if !ok {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func findInside(name string) string {
	for _, dir := range filepath.SplitList(sandboxEnv) {
		if p := filepath.Join(dir, name); visibleInside(p) {
			return p
		}
	}
	return ""
}

func executable(st fs.FileInfo) bool { return st.Mode().Perm()&0o111 != 0 }

// hostFSArgs mounts what interpreters need from the host, read-only,
// mirroring merged-/usr symlinks as symlinks.
func hostFSArgs() []string {
	args := []string{"--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
		case st.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case st.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	etc := []string{"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/perl"}
	if py, err := filepath.Glob("/etc/python3*"); err == nil {
		etc = append(etc, py...)
	}
	for _, p := range etc {
		args = append(args, "--ro-bind-try", p, p)
	}
	return args
}

// Synthetic files under /etc: the sandbox user, and localhost.
var etcFiles = []struct{ path, content string }{
	{"/etc/passwd", "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nsandbox:x:" + sandboxID + ":" + sandboxID + ":sandbox:" + workMount + ":/bin/sh\n"},
	{"/etc/group", "root:x:0:\nsandbox:x:" + sandboxID + ":\n"},
	{"/etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost\n"},
}

// bwrapArgs builds bwrap's command line. ws.files, the contents of etcFiles,
// the seccomp filter, the skill's files, then the info and block pipes, are
// passed as fds 3, 4, ...; the command line
// itself reaches bwrap through one more descriptor (see run), so that no
// host path shows in the sandbox's /proc/1/cmdline.
func (r *Runner) bwrapArgs(j job, ws *workspace) []string {
	l := j.limits
	args := []string{
		"--unshare-all", "--unshare-user", "--disable-userns", "--assert-userns-disabled",
		"--uid", sandboxID, "--gid", sandboxID, "--hostname", "sandbox",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--clearenv",
		"--setenv", "PATH", sandboxEnv,
		"--setenv", "HOME", workMount,
		"--setenv", "LANG", "C.UTF-8",
		"--setenv", "TMPDIR", "/tmp",
	}
	args = append(args, r.fsArgs...)
	for i, f := range etcFiles {
		args = append(args, "--ro-bind-data", strconv.Itoa(3+i), f.path)
	}
	args = append(args, "--seccomp", strconv.Itoa(3+len(etcFiles)))
	args = append(args, ws.skillOps...)
	args = append(args,
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", strconv.FormatInt(l.TmpBytes, 10), "--tmpfs", "/tmp",
		// Twice the watched limit: the watch kills a run that passes
		// WorkDirBytes; the tmpfs's own size bounds what it can write before.
		"--perms", "0700", "--size", strconv.FormatInt(2*l.WorkDirBytes, 10), "--tmpfs", workMount,
		"--info-fd", strconv.Itoa(ws.infoFD), "--block-fd", strconv.Itoa(ws.blockFD),
		"--chdir", workMount,
		"--remount-ro", "/dev",
		"--remount-ro", "/",
		"--",
		r.prlimit,
		"--as="+strconv.FormatInt(l.MemoryBytes, 10),
		"--cpu="+cpuLimit(l.CPUTime),
		"--nproc="+strconv.Itoa(l.Processes),
		"--fsize="+strconv.FormatInt(l.FileSizeBytes, 10),
		"--nofile=256",
		"--core=0",
		"--",
	)
	args = append(args, j.argv...)
	return append(args, j.args...)
}

// cpuLimit gives a soft limit (SIGXCPU, reported as ReasonCPU) and a hard
// limit a second later (SIGKILL) for a script that catches SIGXCPU.
func cpuLimit(d time.Duration) string {
	s := int64(d.Seconds())
	if float64(s) < d.Seconds() || s == 0 {
		s++
	}
	return strconv.FormatInt(s, 10) + ":" + strconv.FormatInt(s+1, 10)
}
