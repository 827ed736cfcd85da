package gitsource

import "github.com/go-git/go-git/v5/plumbing"

// SetBlobRead sets the hook called with each blob read, until undone.
func SetBlobRead(fn func(plumbing.Hash)) (undo func()) {
	blobRead = fn
	return func() { blobRead = nil }
}

// SetDirListed sets the hook called with each folder listed, until undone.
func SetDirListed(fn func(string)) (undo func()) {
	dirListed = fn
	return func() { dirListed = nil }
}

// SetMaxPackMemory sets the bound on a fetched pack's objects kept in
// memory, until undone.
func SetMaxPackMemory(n int64) (undo func()) {
	old := maxPackMemory
	maxPackMemory = n
	return func() { maxPackMemory = old }
}
