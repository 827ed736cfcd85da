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
	nlink      uint64 // hard links to the inode
	known      bool
}

// links is the file's hard link count, 0 when unknown.
func (a fileIdent) links() uint64 { return a.nlink }

func identOf(fi fs.FileInfo) fileIdent {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdent{}
	}
	return fileIdent{dev: uint64(st.Dev), ino: st.Ino, ctimeNanos: int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec), nlink: uint64(st.Nlink), known: true}
}

// same reports whether two identities are known to be the same file state.
// Unknown identities (trees that are not directories) never match, so
// their digests are recomputed.
func (a fileIdent) same(b fileIdent) bool { return a.known && b.known && a == b }
