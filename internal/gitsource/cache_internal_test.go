package gitsource

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/skillport/skillport/catalog"
)

// TestObjectCacheBound fills the shared object cache past its bound: it
// starts over instead of growing, and what was put last is still there.
func TestObjectCacheBound(t *testing.T) {
	defer func(n int) { maxCached = n }(maxCached)
	maxCached = 3
	var c objectCache
	for i := range 10 {
		h := plumbing.NewHash(string(rune('a'+i)) + "000000000000000000000000000000000000000")
		ti, _ := newTreeIndex(&object.Tree{})
		c.putTree(h, ti)
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

// contentID gives a test file a content id, as a git tree does.
type contentID string

func (c contentID) ContentID() string { return string(c) }

// TestDigestsFileAppends saves the catalogs of many commits that each
// change one file: each save appends only the new digest, and the file is
// rewritten before it holds more than twice what the catalog publishes,
// so it never grows without bound. What is kept answers for every file.
func TestDigestsFileAppends(t *testing.T) {
	defer func(n int) { digestSlack = n }(digestSlack)
	digestSlack = 0
	dir := t.TempDir()
	d := loadDigests(dir)
	fsys := fstest.MapFS{}
	for i := range 5 {
		name := fmt.Sprintf("s%d", i)
		fsys[name+"/SKILL.md"] = &fstest.MapFile{Data: []byte("---\nname: " + name + "\ndescription: d\n---\n"), Sys: contentID(fmt.Sprintf("%040d", i))}
	}
	for round := range 40 {
		body := fmt.Sprintf("round %d\n", round)
		fsys["s0/ref.md"] = &fstest.MapFile{Data: []byte(body), Sys: contentID(fmt.Sprintf("%040d", 1000+round))}
		c, err := catalog.Open(fsys, &catalog.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(filepath.Join(dir, digestsFile))
		if err := d.save(c, nil); err != nil {
			t.Fatal(err)
		}
		after, err := os.ReadFile(filepath.Join(dir, digestsFile))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(string(after), "\n")
		if lines > 2*c.Stats().Files {
			t.Fatalf("round %d: %d lines kept for %d files", round, lines, c.Stats().Files)
		}
		if round > 0 && strings.HasPrefix(string(after), string(before)) && lines != strings.Count(string(before), "\n")+1 {
			t.Fatalf("round %d: an append of one change wrote %d lines", round, lines-strings.Count(string(before), "\n"))
		}
		kept := loadDigests(dir)
		for _, s := range c.Skills() {
			for _, f := range s.Files {
				if got, _, ok := kept.lookup(f.ContentID(), f.Size); !ok || got != f.Digest {
					t.Fatalf("round %d: %s is kept as %q, %v; want %s", round, f.Path, got, ok, f.Digest)
				}
			}
		}
	}
}

// TestSmallBlobBound keeps small blobs' bytes past their bound: what does
// not fit is not kept (it is decompressed again when read), a blob taken
// is forgotten, and dropSmall empties the cache.
func TestSmallBlobBound(t *testing.T) {
	defer func(n int) { maxSmallBytes = n }(maxSmallBytes)
	maxSmallBytes = 1000
	var c objectCache
	for i := range 10 {
		c.putSmall(plumbing.NewHash(fmt.Sprintf("%040x", i)), make([]byte, 300))
		if c.smallBytes > maxSmallBytes {
			t.Fatalf("after %d puts the cache holds %d bytes, bound %d", i+1, c.smallBytes, maxSmallBytes)
		}
	}
	if len(c.small) != 3 {
		t.Errorf("%d blobs kept, want 3", len(c.small))
	}
	h := plumbing.NewHash(fmt.Sprintf("%040x", 0))
	if _, ok := c.takeSmall(h); !ok {
		t.Fatal("a kept blob was not returned")
	}
	if _, ok := c.takeSmall(h); ok || c.smallBytes != 600 {
		t.Errorf("a taken blob is still kept (%d bytes)", c.smallBytes)
	}
	c.dropSmall()
	if len(c.small) != 0 || c.smallBytes != 0 {
		t.Errorf("dropSmall left %d blobs, %d bytes", len(c.small), c.smallBytes)
	}
}

// TestKeptCommitsBound keeps more fetched commits than the bound: the map
// starts over instead of growing, and the commit kept last is found.
func TestKeptCommitsBound(t *testing.T) {
	defer func(n int) { maxKeptCommits = n }(maxKeptCommits)
	maxKeptCommits = 3
	var m mirrorStorage
	for i := range 10 {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.CommitObject)
		o.Write([]byte(fmt.Sprintf("tree %040d\n\ncommit %d\n", 0, i)))
		m.keepCommits(map[plumbing.Hash]plumbing.EncodedObject{o.Hash(): o})
		if len(m.commits) > maxKeptCommits {
			t.Fatalf("after %d commits %d are kept, bound %d", i+1, len(m.commits), maxKeptCommits)
		}
		if m.commit(o.Hash()) != o {
			t.Fatalf("commit %d not found right after it was kept", i)
		}
	}
}

// TestHashOf checks the object id parser of the digests file against
// plumbing.NewHash, and that it refuses what is not 40 hex digits.
func TestHashOf(t *testing.T) {
	for _, s := range []string{"0123456789abcdef0123456789ABCDEF01234567", strings.Repeat("f", 40)} {
		h, ok := hashOf(s)
		if !ok || h != plumbing.NewHash(s) {
			t.Errorf("hashOf(%q) = %s, %v", s, h, ok)
		}
	}
	for _, s := range []string{"", strings.Repeat("a", 39), strings.Repeat("a", 41), strings.Repeat("g", 40), "0123456789abcdef0123456789abcdef0123456 "} {
		if _, ok := hashOf(s); ok {
			t.Errorf("hashOf(%q) accepted", s)
		}
	}
}

// TestInAny checks which skill folders a reload's changed paths cover.
func TestInAny(t *testing.T) {
	for _, tc := range []struct {
		dir     string
		folders []string
		want    bool
	}{
		{"a/b", []string{"."}, true},
		{"a/b", []string{"a/b"}, true},
		{"a/b", []string{"a"}, true},
		{"a/bc", []string{"a/b"}, false},
		{"a", []string{"a/b"}, false},
		{"x/y", []string{"a", "x"}, true},
		{"x/y", []string{}, false},
	} {
		if got := inAny(tc.dir, tc.folders); got != tc.want {
			t.Errorf("inAny(%q, %q) = %v", tc.dir, tc.folders, got)
		}
	}
}

// TestObjectID checks the id the pack reader checks reads against with
// go-git's, for each type and a few sizes.
func TestObjectID(t *testing.T) {
	for _, typ := range []plumbing.ObjectType{plumbing.BlobObject, plumbing.TreeObject, plumbing.CommitObject, plumbing.TagObject} {
		for _, n := range []int{0, 1, 63, 64, 1000, 1 << 16} {
			data := bytes.Repeat([]byte{byte(n)}, n)
			if got, want := objectID(typ, data), plumbing.ComputeHash(typ, data); got != want {
				t.Errorf("%s of %d bytes: %s, go-git %s", typ, n, got, want)
			}
		}
	}
}
