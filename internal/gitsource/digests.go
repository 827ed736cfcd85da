package gitsource

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
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

// digestSlack is how many entries past twice a catalog's files the store
// may hold before save rewrites it.
var digestSlack = 1024

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
	m     map[plumbing.Hash]knownDigest
	// fresh is set until the first save when the file was missing or
	// unusable, so that save writes it whole instead of appending.
	fresh bool
}

// loadDigests reads the digests kept beside a mirror; a missing, damaged
// or oversized file is an empty store (every blob is then read).
func loadDigests(dir string) *digestStore {
	d := &digestStore{path: filepath.Join(dir, digestsFile), m: map[plumbing.Hash]knownDigest{}}
	d.fresh = true
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
			return &digestStore{path: d.path, m: map[plumbing.Hash]knownDigest{}, fresh: true}
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		id, valid := hashOf(f[0])
		if !valid || err != nil || size < 0 {
			return &digestStore{path: d.path, m: map[plumbing.Hash]knownDigest{}, fresh: true}
		}
		d.m[id] = knownDigest{size: size, digest: f[2], text: f[3] == "t"}
	}
	d.fresh = sc.Err() != nil
	return d
}

// size returns the size of a blob the last snapshot published.
func (d *digestStore) size(h plumbing.Hash) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k, ok := d.m[h]
	return k.size, ok
}

// lookup implements catalog.Options.KnownDigests.
func (d *digestStore) lookup(id string, size int64) (string, bool, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, valid := hashOf(id)
	k, ok := d.m[h]
	if !valid || !ok || k.size != size {
		return "", false, false
	}
	return k.digest, k.text, true
}

// save records the digests of c's files. New ones are appended to the
// file, so that a commit costs what it changed; once the file holds more
// than twice what c publishes, it is rewritten with c's alone (atomically:
// a crash leaves the old file or the new one, and a torn append makes the
// next start read every blob, never trust a wrong digest).
//
// within, unless nil, lists the folders a reload rebuilt: the skills
// elsewhere kept their files, whose digests are already kept.
func (d *digestStore) save(c *catalog.Catalog, within []string) error {
	d.write.Lock()
	defer d.write.Unlock()
	d.mu.Lock()
	var add []plumbing.Hash
	for _, sk := range c.Skills() {
		if within != nil && !inAny(sk.Dir, within) {
			continue
		}
		for _, f := range sk.Files {
			id, valid := hashOf(f.ContentID())
			if !valid {
				continue
			}
			if k, ok := d.m[id]; ok && k.size == f.Size && k.digest == f.Digest {
				continue
			}
			d.m[id] = knownDigest{size: f.Size, digest: f.Digest, text: f.Text}
			add = append(add, id)
		}
	}
	rewrite := len(d.m) > 2*c.Stats().Files+digestSlack || d.fresh
	if rewrite {
		live := make(map[plumbing.Hash]knownDigest, c.Stats().Files)
		for _, sk := range c.Skills() {
			for _, f := range sk.Files {
				if id, valid := hashOf(f.ContentID()); valid {
					if k, ok := d.m[id]; ok {
						live[id] = k
					}
				}
			}
		}
		d.m = live
		add = slices.SortedFunc(maps.Keys(live), func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	}
	// One line per blob: "<id> <size> sha256:<hex> t|b".
	b := make([]byte, 0, len(add)*120)
	for _, id := range add {
		k := d.m[id]
		b = hex.AppendEncode(b, id[:])
		b = append(b, ' ')
		b = strconv.AppendInt(b, k.size, 10)
		b = append(b, ' ')
		b = append(b, k.digest...)
		if k.text {
			b = append(b, " t\n"...)
		} else {
			b = append(b, " b\n"...)
		}
	}
	d.fresh = false
	d.mu.Unlock()
	if !rewrite {
		if len(add) == 0 {
			return nil
		}
		fh, err := os.OpenFile(d.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		_, err = fh.Write(b)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(d.path), digestsFile+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
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

// hashOf parses a 40-digit hex object id without allocating: a save looks
// up every file of the catalog.
func hashOf(id string) (plumbing.Hash, bool) {
	var h plumbing.Hash
	if len(id) != 2*len(h) {
		return h, false
	}
	for i := range h {
		hi, ok1 := fromHex(id[2*i])
		lo, ok2 := fromHex(id[2*i+1])
		if !ok1 || !ok2 {
			return h, false
		}
		h[i] = hi<<4 | lo
	}
	return h, true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// inAny reports whether dir is one of the folders or below one.
func inAny(dir string, folders []string) bool {
	for _, f := range folders {
		if f == "." || dir == f || strings.HasPrefix(dir, f) && len(dir) > len(f) && dir[len(f)] == '/' {
			return true
		}
	}
	return false
}
