package catalog

import (
	"io/fs"
	"syscall"
	"time"
)

// changeTime returns the inode change time of fi, which the kernel sets on
// every change to a file's content, links or metadata and which, unlike the
// modification time, no program can set back.
func changeTime(fi fs.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), true
}
