//go:build !linux

package catalog

import "io/fs"

// fileIdent is empty where skillport does not read the inode and change time
// (everywhere but Linux): digests are then never reused across snapshots.
type fileIdent struct{}

func identOf(fs.FileInfo) fileIdent { return fileIdent{} }

func (fileIdent) same(fileIdent) bool { return false }

// links is 0: the link count is not read here.
func (fileIdent) links() uint64 { return 0 }
