package gitsource_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/gitsource"
)

// swapIdxOffsets rewrites a version-2 pack index so that objects a and b
// point at each other's entries, with a valid checksum: the index of a
// tampered cache.
func swapIdxOffsets(t *testing.T, idxPath, a, b string) {
	t.Helper()
	idx, err := os.ReadFile(idxPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(idx, []byte("\xfftOc\x00\x00\x00\x02")) {
		t.Fatalf("%s is not a version-2 index", idxPath)
	}
	n := int(binary.BigEndian.Uint32(idx[8+255*4:]))
	names := idx[8+256*4:]
	offsets := names[n*20+n*4:]
	find := func(id string) int {
		raw, _ := hex.DecodeString(id)
		for i := range n {
			if bytes.Equal(names[i*20:i*20+20], raw) {
				return i
			}
		}
		t.Fatalf("%s not in %s", id, idxPath)
		return 0
	}
	i, j := find(a), find(b)
	var tmp [4]byte
	copy(tmp[:], offsets[i*4:])
	copy(offsets[i*4:i*4+4], offsets[j*4:j*4+4])
	copy(offsets[j*4:j*4+4], tmp[:])
	sum := sha1.Sum(idx[:len(idx)-20])
	copy(idx[len(idx)-20:], sum[:])
	if err := os.WriteFile(idxPath, idx, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTamperedIndex swaps two blobs' offsets in the mirror's pack index:
// a restart serving from that mirror must refuse the blob (an error saying
// to delete the cache directory), never serve the other blob's bytes as
// its content.
func TestTamperedIndex(t *testing.T) {
	r := newRemote(t)
	a, b := skillMD("a", "tampered"), skillMD("b", "tampered")
	r.commit("one", map[string]string{"a/SKILL.md": a, "b/SKILL.md": b})
	r.push("main")
	cache := t.TempDir()
	spec := "git+" + r.fileURL() + "@main"
	mustOpen(t, spec, &gitsource.Options{CacheDir: cache})

	idxs, _ := filepath.Glob(filepath.Join(cache, "*.git", "objects", "pack", "*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("%d pack indexes in the mirror, want 1", len(idxs))
	}
	blobA := git(t, r.work, "rev-parse", "HEAD:a/SKILL.md")
	blobB := git(t, r.work, "rev-parse", "HEAD:b/SKILL.md")
	swapIdxOffsets(t, idxs[0], blobA, blobB)
	// The digests kept beside the mirror would spare reading the blobs at
	// start: drop them, so that the build reads what the index says.
	digests, _ := filepath.Glob(filepath.Join(cache, "*.git", "skillport-*"))
	for _, d := range digests {
		os.RemoveAll(d)
	}

	s, err := open(t, spec, &gitsource.Options{CacheDir: cache})
	var got []string
	if err != nil {
		got = append(got, err.Error())
	} else {
		c := s.Catalog()
		for _, d := range c.Diagnostics() {
			got = append(got, d.Path+": "+d.Message)
		}
		for uri, want := range map[string]string{"skill://a/SKILL.md": a, "skill://b/SKILL.md": b} {
			f := c.File(uri)
			if f == nil {
				continue
			}
			data, err := c.ReadFile(f)
			if err != nil {
				got = append(got, err.Error())
			} else if string(data) != want {
				t.Errorf("%s served another blob's bytes:\n%s", uri, data)
			}
		}
	}
	all := strings.Join(got, "\n")
	if !strings.Contains(all, "is another object") || !strings.Contains(all, "delete "+filepath.Dir(filepath.Dir(filepath.Dir(idxs[0])))) {
		t.Errorf("the tampered index was not reported with the cache to delete; saw:\n%s", all)
	}
}

// TestDuplicateTreeEntry serves a commit whose tree lists SKILL.md twice
// (git never writes one; hash-object --literally does): the commit is
// refused with an error naming the folder, on a start and on an update
// (which keeps serving the last good commit).
func TestDuplicateTreeEntry(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{"ok/SKILL.md": skillMD("ok", "fine")})
	r.push("main")
	spec := "git+" + r.fileURL() + "@main"
	s := mustOpen(t, spec, nil)

	one := gitIn(t, r.work, strings.NewReader(skillMD("a", "first")), "hash-object", "-w", "--stdin")
	two := gitIn(t, r.work, strings.NewReader(skillMD("a", "second")), "hash-object", "-w", "--stdin")
	entry := func(mode, name, id string) string {
		raw, _ := hex.DecodeString(id)
		return fmt.Sprintf("%s %s\x00%s", mode, name, raw)
	}
	dup := gitIn(t, r.work, strings.NewReader(entry("100644", "SKILL.md", one)+entry("100644", "SKILL.md", two)),
		"hash-object", "-t", "tree", "-w", "--literally", "--stdin")
	okTree := git(t, r.work, "rev-parse", "HEAD:ok")
	root := gitIn(t, r.work, strings.NewReader(entry("40000", "a", dup)+entry("40000", "ok", okTree)),
		"hash-object", "-t", "tree", "-w", "--literally", "--stdin")
	commit := git(t, r.work, "commit-tree", root, "-p", "HEAD", "-m", "forged")
	git(t, r.work, "update-ref", "refs/heads/main", commit)
	r.push("main")

	const want = `readdir a: tree ` // then the tree's id
	c, _, err := s.Update(context.Background())
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"SKILL.md" twice`) {
		t.Errorf("update to a tree listing SKILL.md twice: %v", err)
	}
	if c.Skill("skill://ok/SKILL.md") == nil || c.Skill("skill://a/SKILL.md") != nil {
		t.Error("the last good commit is not what is served after the refused update")
	}
	_, err = open(t, spec, nil)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"SKILL.md" twice`) {
		t.Errorf("start on a tree listing SKILL.md twice: %v", err)
	}
}
