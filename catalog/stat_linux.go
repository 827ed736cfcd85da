//go:build linux

package catalog

import (
	"io/fs"
	"syscall"
)

// fileIdent is what, beyond size and modification time, says a file is the
// one hashed before: the same inode on the same device, with the same change
// time (which a rename over the file or a metadata change updates).
type fileIdent struct {
	dev, ino   uint64
	ctimeNanos int64
	known      bool
}

func identOf(fi fs.FileInfo) fileIdent {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdent{}
	}
	return fileIdent{dev: uint64(st.Dev), ino: st.Ino, ctimeNanos: st.Ctim.Sec*1e9 + st.Ctim.Nsec, known: true}
}

// same reports whether two identities are known to be the same file state.
// Unknown identities (trees that are not directories) never match, so
// their digests are recomputed.
func (a fileIdent) same(b fileIdent) bool { return a.known && b.known && a == b }
