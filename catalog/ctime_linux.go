package catalog

import (
	"syscall"
	"time"
)

// statBuf is reused across lstat calls of a walk, which then allocates no
// FileInfo per file.
type statBuf = syscall.Stat_t

// lchangeTime returns the inode change time of p (not following a final
// symbolic link). The kernel sets it on every change to a file's content,
// links or metadata, and unlike the modification time no program can set
// it back.
func lchangeTime(p string, st *statBuf) (time.Time, error) {
	for {
		err := syscall.Lstat(p, st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return time.Time{}, err
		}
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), nil
	}
}

// dirStampOf is the stamp of a directory as lchangeTime left it in st,
// comparable with those of the listings the descriptor walk keeps.
func dirStampOf(st *statBuf) (dirStamp, bool) {
	return dirStamp{dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec}, true
}
