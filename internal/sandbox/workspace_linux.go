package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// workspace is one run's host-side state: a private parent directory
// holding a copy of the skill, the descriptors handed to bwrap, and, once
// the sandbox is set up, the sandbox's own /work.
//
// /work is a tmpfs that bwrap mounts inside the sandbox, so the sandbox's
// mount table names no host directory. We reach it through the sandbox's
// /proc/PID/root before the script starts and keep the directory open: the
// open descriptor keeps the tmpfs alive after the sandbox is gone, long
// enough to collect the outputs.
//
// The skill is copied rather than bound in place: the sandbox's unprivileged
// uid could not reach a skill under a private directory such as /root, and
// bwrap resolves even descriptor binds by path. The copy is also a snapshot
// (the script sees exactly the files that were checked) with permissions
// that let only the sandbox read it: root:65534 0750 for a root caller.
type workspace struct {
	r      *Runner
	parent string // 0711, owned by the caller
	skill  string
	work   *os.Root   // the sandbox's /work; nil until openWork
	files  []*os.File // fds 3.. for bwrap, see bwrapArgs
	// infoFD and blockFD are bwrap's --info-fd and --block-fd; info and
	// unblock are our ends of those pipes.
	infoFD, blockFD int
	info, unblock   *os.File
	// skillOps are bwrap's options that recreate the skill at /skill.
	skillOps []string
}

func (r *Runner) newWorkspace(j job) (_ *workspace, err error) {
	parent, err := os.MkdirTemp(r.workRoot, "skillport-run-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s: work directory under %s: %w", j.label, r.workRoot, err)
	}
	ws := &workspace{r: r, parent: parent, skill: filepath.Join(parent, "skill")}
	defer func() {
		if err != nil {
			ws.remove()
		}
	}()
	fail := func(err error) (*workspace, error) {
		return nil, fmt.Errorf("sandbox: %s: %w", j.label, err)
	}
	// bwrap, running as the sandbox's uid, must traverse the parent.
	if err := os.Chmod(parent, 0o711); err != nil {
		return fail(err)
	}
	if err := os.Mkdir(ws.skill, 0o750); err != nil {
		return fail(err)
	}
	if err := ws.own(ws.skill, 0); err != nil {
		return fail(err)
	}
	if j.skillDir != "" {
		if err := ws.copySkill(j.skillDir, j.limits); err != nil {
			return nil, err
		}
	}
	for _, f := range etcFiles {
		pr, pw, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		ws.files = append(ws.files, pr)
		// Far below the pipe's buffer, so this cannot block.
		_, err = io.WriteString(pw, f.content)
		pw.Close()
		if err != nil {
			return fail(err)
		}
	}
	f, err := memFile("skillport-seccomp", r.seccomp)
	if err != nil {
		return fail(err)
	}
	ws.files = append(ws.files, f)
	if err := ws.skillFiles(); err != nil {
		return fail(err)
	}
	// bwrap writes its child's pid to one pipe and waits on the other
	// before it starts the script.
	ir, iw, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	ws.info = ir
	ws.files = append(ws.files, iw)
	ws.infoFD = 2 + len(ws.files)
	br, bw, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	ws.unblock = bw
	ws.files = append(ws.files, br)
	ws.blockFD = 2 + len(ws.files)
	return ws, nil
}

// openWork finds the sandbox's /work once bwrap has built the sandbox and
// waits on blockFD, keeps it open as ws.work, and lets the script start.
//
// bwrap reports its child's pid before the child builds the new root, so
// we wait until /proc/PID/root is no longer the host's root and holds
// /work (bwrap first pivots to an intermediate root without it, and mounts
// everything before the final pivot). The script cannot start before we
// write to blockFD, so nothing inside can race us.
func (ws *workspace) openWork(ctx context.Context) error {
	var info struct {
		Pid int `json:"child-pid"`
	}
	data, err := io.ReadAll(io.LimitReader(ws.info, 64<<10))
	if err != nil {
		return fmt.Errorf("reading bwrap's --info-fd: %w", err)
	}
	if err := json.Unmarshal(data, &info); err != nil || info.Pid <= 0 {
		return fmt.Errorf("bwrap's --info-fd gave no child pid (%q)", data)
	}
	host, err := os.Stat("/")
	if err != nil {
		return err
	}
	rootPath := "/proc/" + strconv.Itoa(info.Pid) + "/root"
	for delay := time.Millisecond; ; delay = min(2*delay, 20*time.Millisecond) {
		work, err := openSandboxWork(rootPath, host)
		if err == nil {
			ws.work = work
			break
		}
		if !errors.Is(err, errNotYet) {
			return fmt.Errorf("opening the sandbox's %s through %s: %w", workMount, rootPath, err)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(delay):
		}
	}
	_, err = ws.unblock.Write([]byte{1})
	ws.unblock.Close()
	ws.unblock = nil
	return err
}

var errNotYet = errors.New("sandbox not built yet")

// openSandboxWork opens root's /work if root is the sandbox's finished root.
func openSandboxWork(rootPath string, host fs.FileInfo) (*os.Root, error) {
	root, err := os.OpenRoot(rootPath)
	if err != nil {
		return nil, err // ENOENT: bwrap's child is gone
	}
	defer root.Close()
	st, err := root.Stat(".")
	if err != nil {
		return nil, err
	}
	if os.SameFile(st, host) {
		return nil, errNotYet
	}
	work, err := root.OpenRoot(strings.TrimPrefix(workMount, "/"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNotYet
	}
	if err != nil {
		return nil, err
	}
	// Only bwrap's fresh tmpfs will do, never a directory of the host.
	if err := isTmpfs(work); err != nil {
		work.Close()
		return nil, err
	}
	return work, nil
}

func isTmpfs(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(d.Fd()), &st); err != nil {
		return err
	}
	if st.Type != tmpfsMagic {
		return fmt.Errorf("%s is not a tmpfs (file system type %#x)", workMount, st.Type)
	}
	return nil
}

const tmpfsMagic = 0x01021994

// skillFiles lays the skill's copy out for bwrap to recreate at /skill
// inside the sandbox's own root file system: --dir, --symlink, and --file
// with a descriptor per file. Nothing is bind-mounted from the host, so the
// sandbox's mountinfo shows no host path for /skill; the root is remounted
// read-only before the script starts.
func (ws *workspace) skillFiles() error {
	ws.skillOps = []string{"--dir", skillMount}
	return filepath.WalkDir(ws.skill, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == ws.skill {
			return err
		}
		rel, err := filepath.Rel(ws.skill, p)
		if err != nil {
			return err
		}
		inside := skillMount + "/" + filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			ws.skillOps = append(ws.skillOps, "--dir", inside)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			ws.skillOps = append(ws.skillOps, "--symlink", target, inside)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			ws.files = append(ws.files, f)
			if executable(info) {
				ws.skillOps = append(ws.skillOps, "--perms", "0555")
			}
			ws.skillOps = append(ws.skillOps, "--file", strconv.Itoa(2+len(ws.files)), inside)
		}
		if len(ws.skillOps) > maxSkillOps {
			return fmt.Errorf("%w: more entries than bubblewrap can recreate (at most %d arguments; about %d files)", ErrSkillTooLarge, maxSkillOps, maxSkillOps/3)
		}
		return nil
	})
}

// maxSkillOps keeps bwrap's options, read from one descriptor, under its
// limit of 9000 arguments with room for the rest.
const maxSkillOps = 8500

// own gives a path to uid and the sandbox's group when the caller is root;
// a non-root caller's sandbox runs as the caller, who owns it already.
func (ws *workspace) own(p string, uid int) error {
	if !ws.r.asRoot {
		return nil
	}
	return os.Lchown(p, uid, ws.r.gid)
}

// copySkill copies the skill's directories, regular files and symbolic links
// (as links: inside the sandbox they can only reach what the sandbox shows)
// into ws.skill, within the limits. Other special files are left out.
func (ws *workspace) copySkill(src string, l Limits) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("sandbox: skill directory %s: %w", src, err)
	}
	defer root.Close()
	var files int
	var size int64
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("sandbox: %s: %w", filepath.Join(src, p), err)
		}
		if p == "." {
			return nil
		}
		if files++; files > l.SkillFiles {
			return fmt.Errorf("sandbox: %s: more than %d files: %w", src, l.SkillFiles, ErrSkillTooLarge)
		}
		dst := filepath.Join(ws.skill, filepath.FromSlash(p))
		switch {
		case d.IsDir():
			if err := os.Mkdir(dst, 0o750); err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
		case d.Type()&fs.ModeSymlink != 0:
			target, err := root.Readlink(p)
			if err != nil {
				return fmt.Errorf("sandbox: %s: %w", filepath.Join(src, p), err)
			}
			if err := os.Symlink(target, dst); err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
		case d.Type().IsRegular():
			n, err := copyFile(root, p, dst, l.SkillBytes-size)
			if err != nil {
				return fmt.Errorf("sandbox: %s: %w", filepath.Join(src, p), err)
			}
			size += n
		default:
			return nil
		}
		if err := ws.own(dst, 0); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		return nil
	})
}

// copyFile copies at most max bytes of one regular file, keeping whether it
// is executable.
func copyFile(root *os.Root, p, dst string, max int64) (int64, error) {
	in, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%w: replaced while being copied", ErrScriptNotFound)
	}
	mode := fs.FileMode(0o640)
	if executable(st) {
		mode = 0o750
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(in, max+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > max {
		err = fmt.Errorf("skill larger than %d bytes: %w", max, ErrSkillTooLarge)
	}
	return n, err
}

// closeFiles drops our copies of the descriptors once bwrap holds them.
func (ws *workspace) closeFiles() {
	for _, f := range ws.files {
		f.Close()
	}
	ws.files = nil
}

// close releases everything the run still holds, the sandbox's /work
// included.
func (ws *workspace) close() {
	ws.closeFiles()
	for _, f := range []*os.File{ws.info, ws.unblock} {
		if f != nil {
			f.Close()
		}
	}
	ws.info, ws.unblock = nil, nil
	if ws.work != nil {
		ws.work.Close()
		ws.work = nil
	}
}

// watch polls the work directory until done and calls exceeded once it holds
// more than the limits allow. RLIMIT_FSIZE bounds single files; this bounds
// their number and sum.
func (ws *workspace) watch(done <-chan struct{}, l Limits, exceeded func()) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		var n int
		var size int64
		over := false
		fs.WalkDir(ws.work.FS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // a directory the script made unreadable (non-root callers only)
			}
			n++
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
			if n > l.WorkDirFiles || size > l.WorkDirBytes {
				over = true
				return filepath.SkipAll
			}
			return nil
		})
		if over {
			exceeded()
			return
		}
	}
}

// collect returns the regular files of the work directory, within the
// limits. The sandbox is gone by now, so nothing changes under us; os.Root
// and the same-file check still keep a planted link from leading outside.
func (ws *workspace) collect(l Limits) (outs []Output, truncated bool) {
	root := ws.work
	if root == nil {
		return nil, false
	}
	budget := l.OutputFileBytes
	fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if len(outs) >= l.OutputFiles {
			truncated = true
			return fs.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		f, err := root.OpenFile(filepath.FromSlash(p), os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil
		}
		defer f.Close()
		if fst, err := f.Stat(); err != nil || !os.SameFile(info, fst) || !fst.Mode().IsRegular() {
			return nil
		}
		data, _ := io.ReadAll(io.LimitReader(f, budget))
		budget -= int64(len(data))
		o := Output{Path: p, Size: info.Size(), Data: data, Truncated: int64(len(data)) < info.Size()}
		if o.Truncated {
			truncated = true
		}
		o.MIMEType = mime.TypeByExtension(path.Ext(p))
		switch {
		case o.MIMEType != "":
		case o.Truncated:
			// A cut prefix would be sniffed wrongly (a PNG header reads as text).
			o.MIMEType = "application/octet-stream"
		default:
			o.MIMEType = http.DetectContentType(data)
		}
		outs = append(outs, o)
		return nil
	})
	return outs, truncated
}

// remove releases the run's descriptors, its /work included, and deletes
// its private directory (the skill's copy, which only we write).
func (ws *workspace) remove() {
	ws.close()
	if err := os.RemoveAll(ws.parent); err != nil {
		ws.r.log.Warn("sandbox: work directory left behind", "dir", ws.parent, "err", err)
	}
}
