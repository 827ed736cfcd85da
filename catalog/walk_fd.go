//go:build linux

package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The descriptor walk reads a tree opened with OpenDir through directory
// descriptors instead of os.Root paths: each directory is opened once,
// relative to its parent's descriptor, by its single name component with
// O_NOFOLLOW|O_DIRECTORY, and each file relative to its directory with
// O_NOFOLLOW. That is the same containment os.Root gives (a name from
// getdents has no "/" and is never "." or "..", and the kernel refuses to
// follow a link in its place), at a fraction of the system calls: os.Root
// re-validates every open, registers each file with the poller, and
// DirEntry.Info costs an lstat per entry, where this walk takes the kind
// from getdents' d_type and size and times from fstat on the descriptor it
// reads. Symbolic links are still resolved by os.Root, from the root, as in
// the portable walk.

// fdWalkSupported reports whether this platform has the descriptor walk.
const fdWalkSupported = true

const (
	openDirFlags  = syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	openFileFlags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_CLOEXEC | syscall.O_NOCTTY |
		// A FIFO swapped in after getdents would block a blocking open;
		// O_NONBLOCK makes that open return, and fstat then refuses it.
		// Reads of regular files ignore the flag.
		syscall.O_NONBLOCK
)

// fdDir is an open directory, shared with the tasks of its subdirectories,
// which open themselves relative to it; the last user closes it.
type fdDir struct {
	fd   int
	f    *os.File // set when opened through os.Root; owns fd
	refs atomic.Int32
	keep bool // the tree's root, closed at the end of the build
}

func (d *fdDir) release() {
	if d != nil && !d.keep && d.refs.Add(-1) == 0 {
		d.close()
	}
}

func (d *fdDir) close() {
	if d.f != nil {
		d.f.Close()
	} else {
		syscall.Close(d.fd)
	}
}

// openFDRoot opens the tree's root for the descriptor walk, through the
// source's os.Root.
func (b *builder) openFDRoot() error {
	f, err := b.src.root.OpenFile(".", os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	b.rootDir = &fdDir{fd: int(f.Fd()), f: f, keep: true}
	return nil
}

// visitFD is visit for the descriptor walk.
func (b *builder) visitFD(t *dirTask, r *fileReader) []*dirTask {
	n := t.n
	d, err := b.openDirFD(t)
	t.pfd.release()
	var entries []fs.DirEntry
	if err == nil {
		entries, err = b.listFD(n, d, r.direntBuf())
		if err != nil {
			d.release()
		}
	}
	if err != nil {
		n.unreadable(err)
		return nil
	}
	defer d.release()
	subs := b.readEntries(n, entries, t.depth, t.inLink, true)

	inSkill := t.inSkill || n.skillMD != nil
	if inSkill {
		for _, wf := range n.files {
			if !wf.viaLink { // links are opened from the root by hashAll
				b.digestAt(wf, d.fd, r)
			}
		}
		if b.src.check {
			b.dropChecked(n)
		}
	}

	tasks := make([]*dirTask, 0, len(subs))
	for i := len(subs) - 1; i >= 0; i-- { // popped in name order
		sub := subs[i]
		task := &dirTask{n: sub.n, depth: t.depth + 1, inLink: sub.inLink, inSkill: inSkill}
		// A link is resolved from the root by os.Root; anything else opens
		// relative to this directory.
		if !sub.link {
			d.refs.Add(1)
			task.pfd = d
		}
		tasks = append(tasks, task)
	}
	return tasks
}

// openDirFD opens the directory of t, holding one reference for the caller.
func (b *builder) openDirFD(t *dirTask) (*fdDir, error) {
	n := t.n
	switch {
	case n.path == ".":
		return b.rootDir, nil
	case t.pfd != nil:
		fd, err := openat(t.pfd.fd, path.Base(n.path), openDirFlags)
		if err != nil {
			return nil, &fs.PathError{Op: "openat", Path: n.path, Err: err}
		}
		d := &fdDir{fd: fd}
		d.refs.Store(1)
		return d, nil
	}
	// A followed directory link: os.Root resolves it, inside the root only.
	f, err := b.src.root.OpenFile(n.path, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	d := &fdDir{fd: int(f.Fd()), f: f}
	d.refs.Store(1)
	return d, nil
}

// listFD returns the entries of directory n, sorted by name. A directory
// whose identity (device, inode, modification and change time) is that of
// the listing the previous build kept is not read again: creating,
// removing or renaming an entry changes the directory's times.
func (b *builder) listFD(n *node, d *fdDir, buf []byte) ([]fs.DirEntry, error) {
	var st unix.Stat_t
	if err := fstat(d.fd, &st); err != nil {
		return nil, err
	}
	id := dirStamp{dev: uint64(st.Dev), ino: uint64(st.Ino), mtime: timespecNanos(st.Mtim), ctime: timespecNanos(st.Ctim)}
	if l := b.prevListings[id.key()]; l != nil && l.stamp == id {
		n.listing = l
		return l.dirEntries(b.src.root, n.path), nil
	}
	entries, err := b.readDirFD(d, n.path, buf)
	if err != nil {
		return nil, err
	}
	// A directory changed so recently that a further change could carry
	// the same times (file system timestamps come from a clock that ticks
	// in milliseconds) is read again next time rather than trusted.
	if id.settled(b.walkStart) && !b.src.check {
		n.listing = newListing(id, entries)
	}
	return entries, nil
}

// direntBufSize is the getdents buffer of each worker: a directory of a
// thousand entries is listed in one call, the 42,000 at the top of a
// large registry in about twenty.
const direntBufSize = 64 << 10

// dirent is an entry of a directory listed by readDir.
type dirent struct {
	name string
	typ  fs.FileMode
	dir  string // the directory's tree path, for Info
	src  *source
}

func (e *dirent) Name() string      { return e.name }
func (e *dirent) IsDir() bool       { return e.typ.IsDir() }
func (e *dirent) Type() fs.FileMode { return e.typ }

func (e *dirent) Info() (fs.FileInfo, error) {
	return os.Lstat(filepath.Join(e.src.dir, filepath.FromSlash(e.dir), e.name))
}

// readDirFD lists the open directory d, at tree path p, sorted by name,
// reading the getdents records itself into buf, where os.File would cost
// an fcntl, a finalizer, the directory's path and an allocation per
// entry: three allocations a directory instead (on the 10,000-skill tree,
// 300,000 allocations fewer per build, BenchmarkOpen10k). An entry whose
// kind the file system leaves unknown is stat'ed, as package os does.
func (b *builder) readDirFD(d *fdDir, p string, buf []byte) ([]fs.DirEntry, error) {
	var ents []dirent
	for {
		n, err := ignoringEINTR2(func() (int, error) { return unix.Getdents(d.fd, buf) })
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: p, Err: err}
		}
		if n <= 0 {
			break
		}
		// Sized once: most directories are read in one call.
		records := 0
		for off := 0; off+19 <= n; records++ {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				return nil, &fs.PathError{Op: "getdents", Path: p, Err: syscall.EIO}
			}
			off += reclen
		}
		ents = slices.Grow(ents, records)
		// One string holds this read's names; entries slice it.
		names := string(buf[:n])
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			ino := binary.NativeEndian.Uint64(buf[off:])
			typ := buf[off+18]
			name := names[off+19 : off+reclen]
			if i := strings.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if ino == 0 || name == "." || name == ".." {
				continue
			}
			e := dirent{name: name, dir: p, src: b.src}
			switch typ {
			case syscall.DT_REG:
			case syscall.DT_DIR:
				e.typ = fs.ModeDir
			case syscall.DT_LNK:
				e.typ = fs.ModeSymlink
			case syscall.DT_FIFO:
				e.typ = fs.ModeNamedPipe
			case syscall.DT_SOCK:
				e.typ = fs.ModeSocket
			case syscall.DT_CHR:
				e.typ = fs.ModeDevice | fs.ModeCharDevice
			case syscall.DT_BLK:
				e.typ = fs.ModeDevice
			default:
				fi, err := e.Info()
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed since the listing
				}
				if err != nil {
					return nil, err
				}
				e.typ = fi.Mode().Type()
			}
			ents = append(ents, e)
		}
	}
	slices.SortFunc(ents, func(a, x dirent) int { return strings.Compare(a.name, x.name) })
	entries := make([]fs.DirEntry, len(ents))
	for i := range ents {
		entries[i] = &ents[i]
	}
	return entries, nil
}

// direntBuf returns r's getdents buffer, made on first use.
func (r *fileReader) direntBuf() []byte {
	if r.dirent == nil {
		r.dirent = make([]byte, direntBufSize)
	}
	return r.dirent
}

func timespecNanos(ts unix.Timespec) int64 { return int64(ts.Sec)*1e9 + int64(ts.Nsec) }

// setStat records what fstat or fstatat returned for f.
func (f *walkFile) setStat(st *unix.Stat_t) {
	f.size = st.Size
	f.mtime = time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec))
	f.ident = fileIdent{dev: uint64(st.Dev), ino: uint64(st.Ino), ctimeNanos: timespecNanos(st.Ctim), nlink: uint64(st.Nlink), known: true}
	f.mode = fs.FileMode(st.Mode & 0o777)
}

// digestAt digests the regular file f of the open directory dirfd, unless
// the previous snapshot's digest still holds (one fstatat tells) or f is
// too large for any skill to publish.
func (b *builder) digestAt(f *walkFile, dirfd int, r *fileReader) {
	if b.prevBy[f.path] != nil {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, f.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
			f.setStat(&st)
			if b.reuse(f) {
				return
			}
		}
	}
	// One buffer serves every read of f, and holds a SKILL.md that fits
	// until it is parsed, below.
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	for attempt := 0; ; attempt++ {
		err := b.hashAt(f, dirfd, r.h, *bp)
		if err == errTooLarge {
			return // its skill is over the limit: candidates() says so
		}
		if err == errRetry {
			if attempt+1 < maxAttempts {
				continue
			}
			err = fmt.Errorf("%w: %s", ErrUnstable, f.path)
		}
		b.hashed.Add(1)
		f.err, f.done = err, true
		if err == nil && f.name == FileNameSKILL {
			b.parse(f, &r.parser)
		}
		return
	}
}

// errTooLarge stops hashAt on a file over the per-skill byte limit.
var errTooLarge = fmt.Errorf("too large")

// hashAt reads and digests f once: open relative to dirfd, fstat, read
// exactly the size fstat gave, fstat again. A file whose size or
// modification time moved meanwhile, or that ends early, returns errRetry.
// Reading exactly size bytes (not to EOF) is enough: growth shows in the
// second fstat.
func (b *builder) hashAt(f *walkFile, dirfd int, h hash.Hash, buf []byte) error {
	fd, err := openat(dirfd, f.name, openFileFlags)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	defer syscall.Close(fd)
	var st unix.Stat_t
	if err := fstat(fd, &st); err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fmt.Errorf("%w: %s is no longer a regular file", ErrUnreadable, f.path)
	}
	f.setStat(&st)
	if f.size > b.opts.MaxBytes {
		return errTooLarge
	}
	if b.src.check && f.name != FileNameSKILL {
		return nil // opened and stat'ed is all a check needs
	}
	h.Reset()
	var tv textValidator
	if f.name == FileNameSKILL {
		// Kept whole for the parser: in buf when it fits (the caller
		// parses it before reusing buf), else in memory of its own.
		data := buf[:min(f.size, int64(len(buf)))]
		if int64(len(data)) < f.size {
			data = make([]byte, f.size)
		}
		if err := readInto(fd, data); err != nil {
			return err
		}
		if !b.src.check { // a check publishes no digest
			h.Write(data) // its text check is skill.Parse's, in parse
		}
		f.data = data
	} else if err := readHash(fd, f.size, buf, h, &tv); err != nil {
		return err
	}
	var after unix.Stat_t
	if err := fstat(fd, &after); err != nil {
		f.dropData()
		return fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	if after.Size != st.Size || after.Mtim != st.Mtim {
		f.dropData()
		return errRetry
	}
	if !b.src.check {
		f.digest = digestString(h)
		f.text = tv.valid()
	}
	return nil
}

// readInto reads exactly len(p) bytes from fd.
func readInto(fd int, p []byte) error {
	for len(p) > 0 {
		k, err := ignoringEINTR2(func() (int, error) { return syscall.Read(fd, p) })
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		if k == 0 {
			return errRetry // shorter than fstat said: truncated meanwhile
		}
		p = p[k:]
	}
	return nil
}

// readHash streams exactly size bytes from fd through h and tv.
func readHash(fd int, size int64, buf []byte, h hash.Hash, tv *textValidator) error {
	for size > 0 {
		p := buf
		if int64(len(p)) > size {
			p = p[:size]
		}
		k, err := ignoringEINTR2(func() (int, error) { return syscall.Read(fd, p) })
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		if k == 0 {
			return errRetry
		}
		h.Write(p[:k])
		tv.Write(p[:k])
		size -= int64(k)
	}
	return nil
}

func openat(dirfd int, name string, flags int) (int, error) {
	return ignoringEINTR2(func() (int, error) { return syscall.Openat(dirfd, name, flags, 0) })
}

func fstat(fd int, st *unix.Stat_t) error {
	_, err := ignoringEINTR2(func() (int, error) { return 0, unix.Fstat(fd, st) })
	return err
}

// ignoringEINTR2 retries f while it is interrupted by a signal, as package
// os does: the Go runtime's own signals can interrupt a system call.
func ignoringEINTR2(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// checkTask is a directory for reloadUnchanged to check.
type checkTask struct {
	path    string
	parent  *fdDir // nil for the root
	depth   int
	inSkill bool
}

// reloadUnchanged returns a snapshot sharing prev's contents when the tree
// is provably the one prev was built from, or nil. prev must have been
// built by the descriptor walk whose listings b.prevListings are. Proof:
// every directory prev's walk reached still has the stamp of its listing
// (so the same entries), and every regular file in a skill was published by
// prev and still has the size, modification time, inode and change time it
// was hashed with (the same test as digest reuse). Everything else prev
// derived (skills, findings, limits, URIs, directories, diagnostics) is a
// function of those alone, except what a symbolic link points to, an
// unpublished file, and the Filter: a tree with any of them takes the full
// build. Checking costs an open and fstat per directory and an fstatat per
// file: no listing, no allocation per file, no assembly.
func (b *builder) reloadUnchanged(prev *Catalog) *Catalog {
	if b.opts.Filter != nil || len(b.dirty) > 0 || b.prevListings == nil {
		return nil
	}
	var failed atomic.Bool
	var files atomic.Int64
	runStack(b.workers(), []*checkTask{{path: "."}}, func() func(*checkTask) []*checkTask {
		return func(t *checkTask) []*checkTask {
			subs, n, ok := b.checkDir(t, &failed)
			if !ok {
				failed.Store(true)
			}
			files.Add(n)
			return subs
		}
	})
	if failed.Load() || files.Load() != int64(len(prev.files)) {
		return nil
	}
	c := &Catalog{src: b.src, opts: b.opts, skills: prev.skills, byURI: prev.byURI, files: prev.files,
		dirs: prev.dirs, diags: prev.diags, stats: prev.stats, id: prev.id}
	c.stats.Hashed, c.stats.Reused = 0, len(prev.files)
	return c
}

// checkDir checks one directory for reloadUnchanged: it returns the
// subdirectories to check, how many published files it confirmed, and
// false on the first difference. Subdirectories already taken are returned
// even then, so that their tasks release the directory.
func (b *builder) checkDir(t *checkTask, failed *atomic.Bool) ([]*checkTask, int64, bool) {
	if failed.Load() {
		t.parent.release()
		return nil, 0, false
	}
	d := b.rootDir
	if t.parent != nil {
		fd, err := openat(t.parent.fd, path.Base(t.path), openDirFlags)
		t.parent.release()
		if err != nil {
			return nil, 0, false
		}
		d = &fdDir{fd: fd}
		d.refs.Store(1)
	}
	defer d.release()
	var st unix.Stat_t
	if fstat(d.fd, &st) != nil {
		return nil, 0, false
	}
	id := dirStamp{dev: uint64(st.Dev), ino: uint64(st.Ino), mtime: timespecNanos(st.Mtim), ctime: timespecNanos(st.Ctim)}
	l := b.prevListings[id.key()]
	if l == nil || l.stamp != id {
		return nil, 0, false
	}
	inSkill := t.inSkill
	for i := range l.len() {
		if l.typ(i).IsRegular() && l.name(i) == FileNameSKILL {
			inSkill = true
		}
	}
	var subs []*checkTask
	var n int64
	for i := range l.len() {
		name := l.name(i)
		if !b.opts.IncludeDotFiles && strings.HasPrefix(name, ".") {
			continue
		}
		p := name
		if t.path != "." {
			p = t.path + "/" + name
		}
		switch typ := l.typ(i); {
		case typ&fs.ModeSymlink != 0:
			return subs, 0, false // its target may have changed
		case typ.IsDir():
			if t.depth < DefaultMaxDepth*4 {
				d.refs.Add(1)
				subs = append(subs, &checkTask{path: p, parent: d, depth: t.depth + 1, inSkill: inSkill})
			}
		case typ.IsRegular() && inSkill:
			pf := b.prevBy[p]
			if pf == nil {
				return subs, 0, false // not published: something about it was wrong
			}
			var wf walkFile
			if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
				return subs, 0, false
			}
			wf.setStat(&st)
			if !pf.ident.same(wf.ident) || pf.Size != wf.size || !pf.ModTime.Equal(wf.mtime) || pf.Mode != b.modeOf(&wf) {
				return subs, 0, false
			}
			n++
		}
	}
	return subs, n, true
}
