// Package cache keeps verified copies of MCP-served skill files on disk.
//
// Files live at <root>/<label>/<scheme>/<authority>/<segments…>, every part
// percent-encoded, so same-URI skills of different servers never share a
// path and the origin is recoverable from the path. A file is written
// once through a temporary file and a rename, read-only and never
// executable; it is never modified in place. Because a model-run tool usually
// runs as the same user and could still replace it, every read recomputes
// the SHA-256 and compares it with the digest the caller holds: a
// mismatch is a miss and the copy is deleted.
//
// Cached content stays MCP-origin content: the cache root must lie outside
// every filesystem-skill discovery path, which [Cache.CheckOutside] enforces.
package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillport/skillport/internal/skilluri"
)

// Cache is a directory of verified skill files. Methods are safe for
// concurrent use (writes go through rename).
type Cache struct {
	root string
}

// ErrInsideDiscoveryPath is returned when the cache root lies inside a
// folder that is scanned for filesystem skills.
var ErrInsideDiscoveryPath = errors.New("cache: the cache directory is inside a skill discovery path")

// DefaultDir is the skillport directory of the user's cache directory.
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	return filepath.Join(d, "skillport"), nil
}

// New returns a cache rooted at dir (created on first write).
func New(dir string) (*Cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Cache{root: abs}, nil
}

// Root returns the cache directory.
func (c *Cache) Root() string { return c.root }

// CheckOutside returns ErrInsideDiscoveryPath if the cache root is one of the
// given directories, inside one, or contains one.
func (c *Cache) CheckOutside(dirs ...string) error {
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		if within(c.root, abs) || within(abs, c.root) {
			return fmt.Errorf("%w: %s and %s; choose another cache directory", ErrInsideDiscoveryPath, c.root, abs)
		}
	}
	return nil
}

func within(parent, p string) bool {
	rel, err := filepath.Rel(parent, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Path returns where the file uri of origin label is cached.
func (c *Cache) Path(label, uri string) (string, error) {
	u, err := skilluri.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	if label == "" || strings.ContainsAny(label, `/\`) || label == "." || label == ".." {
		return "", fmt.Errorf("cache: bad origin label %q", label)
	}
	parts := []string{c.root, label, escape(u.Scheme), escape(u.Authority)}
	for _, s := range u.Segments {
		parts = append(parts, escape(s))
	}
	return filepath.Join(parts...), nil
}

// escape percent-encodes a decoded segment into one safe file name. Dots
// are escaped when the whole segment is dots, so nothing can climb.
func escape(s string) string {
	e := url.PathEscape(s)
	if strings.Trim(e, ".") == "" {
		e = strings.ReplaceAll(e, ".", "%2E")
	}
	return e
}

// Get returns the cached bytes of uri if they hash to digest, which the
// caller takes from the entry it holds. A copy that no longer matches is
// removed and reported as a miss. At most size+1 bytes are read.
func (c *Cache) Get(label, uri, digest string, size int64) ([]byte, bool) {
	p, err := c.Path(label, uri)
	if err != nil {
		return nil, false
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, size+1))
	if err != nil || int64(len(data)) != size || Digest(data) != digest {
		os.Remove(p)
		return nil, false
	}
	return data, true
}

// Put stores data, which the caller has verified, as the copy of uri. An
// existing copy is replaced by rename, never rewritten.
func (c *Cache) Put(label, uri string, data []byte) error {
	p, err := c.Path(label, uri)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(name, 0o444)); err != nil {
		os.Remove(name)
		return fmt.Errorf("cache: %w", err)
	}
	if err := os.Rename(name, p); err != nil {
		os.Remove(name)
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// RemoveOrigin deletes everything cached for label, as when the user
// removes the server.
func (c *Cache) RemoveOrigin(label string) error {
	if label == "" || strings.ContainsAny(label, `/\`) || label == "." || label == ".." {
		return fmt.Errorf("cache: bad origin label %q", label)
	}
	dir := filepath.Join(c.root, label)
	// Cached files and directories are read-only; make them writable so
	// RemoveAll can unlink them.
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// Digest returns "sha256:" and the lowercase hex SHA-256 of data.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
