//go:build !unix

package catalog

import "io/fs"

// fileIdent is empty where the platform gives no inode: digests are never reused.
type fileIdent struct{}

func identOf(fs.FileInfo) fileIdent { return fileIdent{} }

func (fileIdent) same(fileIdent) bool { return false }
