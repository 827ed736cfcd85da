//go:build linux

package catalog

import (
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The check's descriptor walk is the build's (walk_fd.go) with the system
// calls a check does not need taken out. A build opens every file of a
// skill to read and digest it; a check reads only SKILL.md, and for every
// other file needs what its findings are made of:
//
//   - the type (special-file, and a regular file turned into something
//     else), the size (limit) and the hard link count (hardlink): one
//     fstatat(AT_SYMLINK_NOFOLLOW) relative to the open directory gives all
//     three, where open, fstat and close took three calls;
//   - whether the file can be opened (unreadable): only an open proves it.
//     The stat proves it too when the kernel's discretionary check cannot
//     refuse: the file belongs to this process's effective user, its
//     owner-read bit is set (a POSIX ACL never narrows the owner, whose
//     entry is those bits) and it sits on the root's local file system
//     (ext2/3/4, XFS, Btrfs, F2FS, tmpfs: no server or daemon deciding at
//     open time, as NFS and FUSE do). Every other file is opened and
//     closed. What no stat shows, a mandatory access policy (SELinux,
//     AppArmor) refusing the owner, goes unreported by a check and is
//     reported by the server that cannot open the file.
//
// A file found sound that way is only counted (dropSound): no walkFile,
// no path. The few that are not (a finding, or a stat that fails) take
// the build's way, opened and stat'ed, and are reported as the build
// reports them. Directories are listed without the fstat the build takes
// for its listing cache (a check keeps no listing).

// fdCheck is the state of one check's descriptor walk.
type fdCheck struct {
	b *builder
	// euid and dev decide when a stat proves a file readable: owned by
	// euid, on device dev (the root's, when its file system is local).
	euid    uint32
	dev     uint64
	statDev bool // dev is set: the root's file system is local
}

// localFS are the file systems whose permission check at open is the
// inode's mode bits and ACL, nothing the stat cannot see.
var localFS = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:  true, // also ext2 and ext3
	unix.XFS_SUPER_MAGIC:   true,
	unix.BTRFS_SUPER_MAGIC: true,
	unix.F2FS_SUPER_MAGIC:  true,
	unix.TMPFS_MAGIC:       true,
}

// checkFD runs the check of src, a directory, with the descriptor walk.
func checkFD(src *source, o *Options) (*Catalog, error) {
	b, start, err := newBuilder(src, o)
	if err != nil {
		return nil, err
	}
	if err := b.openFDRoot(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer b.rootDir.close()
	chk := &fdCheck{b: b, euid: uint32(os.Geteuid())}
	var sfs unix.Statfs_t
	var st unix.Stat_t
	if unix.Fstatfs(b.rootDir.fd, &sfs) == nil && localFS[int64(sfs.Type)] && fstat(b.rootDir.fd, &st) == nil {
		chk.dev, chk.statDev = uint64(st.Dev), true
	}
	root := &node{path: ".", real: "."}
	runStack(b.workers(), []*dirTask{{n: root}}, func() func(*dirTask) []*dirTask {
		r := newFileReader() // hashAt resets its hash; a check writes nothing to it
		buf := make([]byte, direntBufSize)
		return func(t *dirTask) []*dirTask { return chk.visit(t, r, buf) }
	})
	return b.checkTail(root, start), nil
}

// visit is visitFD for a check: it reads the directory of t, checks its
// files if it is inside a skill, and returns its subdirectories as new
// tasks.
func (chk *fdCheck) visit(t *dirTask, r *fileReader, buf []byte) []*dirTask {
	b, n := chk.b, t.n
	d, err := b.openDirFD(t)
	t.pfd.release()
	var entries []fs.DirEntry
	if err == nil {
		// No fstat for a listing stamp: a check keeps no listing.
		if entries, err = b.readDirFD(d, n.path, buf); err != nil {
			d.release()
		}
	}
	if err != nil {
		n.unreadable(err)
		return nil
	}
	defer d.release()
	if holdsSkill(t.inSkill, entries) {
		entries = chk.dropSound(n, entries, d.fd)
	}
	subs := b.readEntries(n, entries, t.depth, t.inLink, true)
	inSkill := t.inSkill || n.skillMD != nil
	if inSkill {
		for _, wf := range n.files {
			if !wf.viaLink { // links are opened from the root by hashAll
				b.digestAt(wf, d.fd, r)
			}
		}
		b.dropChecked(n)
	}
	return subTasks(d, subs, t.depth, inSkill)
}

// subTasks makes the tasks for the subdirectories of the open directory d.
func subTasks(d *fdDir, subs []subdir, depth int, inSkill bool) []*dirTask {
	tasks := make([]*dirTask, 0, len(subs))
	for i := len(subs) - 1; i >= 0; i-- { // popped in name order
		sub := subs[i]
		task := &dirTask{n: sub.n, depth: depth + 1, inLink: sub.inLink, inSkill: inSkill}
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

// holdsSkill reports whether a directory with these entries is inside a
// skill, as far as its listing tells: below one, or holding a regular
// SKILL.md. A SKILL.md that is a link is resolved later, by readEntries.
func holdsSkill(inSkill bool, entries []fs.DirEntry) bool {
	if inSkill {
		return true
	}
	i, ok := slices.BinarySearchFunc(entries, FileNameSKILL, func(e fs.DirEntry, name string) int { return strings.Compare(e.Name(), name) })
	return ok && entries[i].Type().IsRegular()
}

// dropSound counts, into n, the regular files of n (a directory inside a
// skill, open as dirfd) about which no finding can be, and returns the
// other entries: what readEntries and the build's file checks are for.
// Such a file takes one fstatat (and an open and close when the stat
// cannot prove it readable, see above) and no allocation: it is not
// SKILL.md in any case, has a name and path that can be published, one
// link (or --allow-hardlinks), a size within the skill limit, and can be
// opened. Anything else, or a stat that fails, is left to the build's
// path, which reports it.
func (chk *fdCheck) dropSound(n *node, entries []fs.DirEntry, dirfd int) []fs.DirEntry {
	if badFileSegment(n.path) != "" {
		return entries
	}
	o := &chk.b.opts
	kept := entries[:0]
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.EqualFold(name, FileNameSKILL) ||
			!o.IncludeDotFiles && strings.HasPrefix(name, ".") || badFileSegment(name) != "" {
			kept = append(kept, e)
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG ||
			st.Size > o.MaxBytes || !o.AllowHardlinks && st.Nlink > 1 || !chk.canOpen(dirfd, name, &st) {
			kept = append(kept, e)
			continue
		}
		n.checked++
		n.checkedBytes += st.Size
		n.checkedName = max(n.checkedName, escapedLen(name))
	}
	clear(entries[len(kept):])
	return kept
}

// canOpen reports whether the file name of dirfd, whose stat is st, can be
// opened: by the stat alone when it proves so (see the top of this file),
// else by opening it.
func (chk *fdCheck) canOpen(dirfd int, name string, st *unix.Stat_t) bool {
	if chk.statDev && uint64(st.Dev) == chk.dev && st.Uid == chk.euid && st.Mode&syscall.S_IRUSR != 0 {
		return true
	}
	fd, err := openat(dirfd, name, openFileFlags)
	if err != nil {
		return false
	}
	syscall.Close(fd)
	return true
}
