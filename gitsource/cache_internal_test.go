package gitsource

import (
	"os"
	"path/filepath"
	"strings"
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

// TestDigestsFileBound gives loadDigests a file over its bound: it is
// ignored rather than read.
func TestDigestsFileBound(t *testing.T) {
	defer func(n int64) { maxDigestsFile = n }(maxDigestsFile)
	dir := t.TempDir()
	line := strings.Repeat("a", 40) + " 3 sha256:" + strings.Repeat("0", 64) + " t\n"
	if err := os.WriteFile(filepath.Join(dir, digestsFile), []byte(line+line), 0o600); err != nil {
		t.Fatal(err)
	}
	maxDigestsFile = int64(len(line)*2) - 1
	if n := len(loadDigests(dir).m); n != 0 {
		t.Errorf("a digests file over the bound gave %d entries", n)
	}
	maxDigestsFile = int64(len(line) * 2)
	if n := len(loadDigests(dir).m); n != 1 {
		t.Errorf("a digests file at the bound gave %d entries, want 1", n)
	}
}
