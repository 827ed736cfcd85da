package gitsource

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestObjectCacheBound fills the shared object cache past its bound: it
// starts over instead of growing, and what was put last is still there.
func TestObjectCacheBound(t *testing.T) {
	defer func(n int) { maxCached = n }(maxCached)
	maxCached = 3
	var c objectCache
	for i := range 10 {
		h := plumbing.NewHash(string(rune('a'+i)) + "000000000000000000000000000000000000000")
		c.putTree(h, newTreeIndex(&object.Tree{}))
		c.putBlob(h, blobInfo{size: int64(i)})
		if len(c.trees) > maxCached || len(c.blobs) > maxCached {
			t.Fatalf("after %d puts the cache holds %d trees and %d blobs, bound %d", i+1, len(c.trees), len(c.blobs), maxCached)
		}
		if c.tree(h) == nil {
			t.Fatalf("tree %d missing right after it was put", i)
		}
		if bi, ok := c.blob(h); !ok || bi.size != int64(i) {
			t.Fatalf("blob %d: %+v %v", i, bi, ok)
		}
	}
}
