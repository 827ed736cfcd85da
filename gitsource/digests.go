package gitsource

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/skillport/skillport/catalog"
)

// digestsFile holds, beside a mirror, the digests of the blobs of the
// last commit served, so that a restart reads only the SKILL.md files.
const digestsFile = "skillport-digests"

// maxDigestsFile bounds what is read of it; a larger file is ignored.
var maxDigestsFile int64 = 64 << 20

type knownDigest struct {
	size   int64
	digest string
	text   bool
}

// digestStore maps blob ids to the digests a catalog computed for them.
type digestStore struct {
	path  string
	write sync.Mutex // serialises save
	mu    sync.Mutex
	m     map[string]knownDigest
}

// loadDigests reads the digests kept beside a mirror; a missing, damaged
// or oversized file is an empty store (every blob is then read).
func loadDigests(dir string) *digestStore {
	d := &digestStore{path: filepath.Join(dir, digestsFile), m: map[string]knownDigest{}}
	fh, err := os.Open(d.path)
	if err != nil {
		return d
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil || fi.Size() > maxDigestsFile {
		return d
	}
	sc := bufio.NewScanner(io.LimitReader(fh, maxDigestsFile))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || len(f[0]) != 40 || !strings.HasPrefix(f[2], "sha256:") || len(f[2]) != 71 {
			return &digestStore{path: d.path, m: map[string]knownDigest{}}
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || size < 0 {
			return &digestStore{path: d.path, m: map[string]knownDigest{}}
		}
		d.m[f[0]] = knownDigest{size: size, digest: f[2], text: f[3] == "t"}
	}
	return d
}

// size returns the size of a blob the last snapshot published.
func (d *digestStore) size(h plumbing.Hash) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k, ok := d.m[h.String()]
	return k.size, ok
}

// lookup implements catalog.Options.KnownDigests.
func (d *digestStore) lookup(id string, size int64) (string, bool, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k, ok := d.m[id]
	if !ok || k.size != size {
		return "", false, false
	}
	return k.digest, k.text, true
}

// save replaces the store with the digests of c's files, read from fsys,
// and writes it (atomically: a crash leaves the old file or the new one).
func (d *digestStore) save(c *catalog.Catalog, fsys *FS) error {
	d.write.Lock()
	defer d.write.Unlock()
	m := map[string]knownDigest{}
	var b strings.Builder
	for _, sk := range c.Skills() {
		for _, f := range sk.Files {
			fi, err := fsys.Lstat(f.Path)
			if err != nil {
				continue
			}
			id := fi.Sys().(*fileInfo).hash.String()
			if _, dup := m[id]; dup {
				continue
			}
			m[id] = knownDigest{size: f.Size, digest: f.Digest, text: f.Text}
			t := "b"
			if f.Text {
				t = "t"
			}
			fmt.Fprintf(&b, "%s %d %s %s\n", id, f.Size, f.Digest, t)
		}
	}
	d.mu.Lock()
	d.m = m
	d.mu.Unlock()
	tmp, err := os.CreateTemp(filepath.Dir(d.path), digestsFile+".*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(b.String())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), d.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
