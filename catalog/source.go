package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/skillport/skillport/skill"
)

// source is the tree a catalog reads, shared by its successive snapshots.
type source struct {
	fsys fs.FS
	// root is set when the tree is a directory opened with os.OpenRoot; it
	// keeps every read inside the directory, whatever symlinks appear later.
	root *os.Root
	// dir is the directory's path, for messages and watching; "" for other trees.
	dir string

	mu sync.Mutex
	// closed is set by Catalog.Close.
	closed bool
	// dirty lists paths whose bytes no longer matched their digest on read;
	// the next build re-hashes them even if size and times look unchanged.
	dirty map[string]bool
	// listings are the directory listings of the last descriptor walk, by
	// device and inode (a directory's entries do not depend on the path it
	// was reached by, and the key costs no string), and listingsOf the catalog that walk built. Whether a
	// listing still holds depends only on the directory's stamp now, so any
	// snapshot's Reload may use the latest; only listingsOf's Reload may
	// conclude from them that nothing changed (reloadUnchanged).
	listings   map[dirKey]*listing
	listingsOf *Catalog
	// check is set for [CheckDir] and [Check]: the build only reports. Files
	// other than SKILL.md are opened and stat'ed but not read, and no
	// published structure (files, directories, frontmatter) is kept.
	check bool
}

func (s *source) loadListings() (map[dirKey]*listing, *Catalog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listings, s.listingsOf
}

func (s *source) storeListings(l map[dirKey]*listing, of *Catalog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listings, s.listingsOf = l, of
}

func (s *source) markDirty(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirty == nil {
		s.dirty = map[string]bool{}
	}
	s.dirty[p] = true
}

// hasDirty reports whether a read found a file changed since its snapshot.
func (s *source) hasDirty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.dirty) > 0
}

// takeDirty returns and clears the dirty set.
func (s *source) takeDirty() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dirty
	s.dirty = nil
	return d
}

// Open builds a catalog from a tree. fsys may be any fs.FS; directories are
// best opened with [OpenDir], which confines every read to the directory.
// The error is non-nil only when the tree cannot be read at all; problems
// with individual skills are diagnostics.
func Open(fsys fs.FS, opts *Options) (*Catalog, error) {
	if fsys == nil {
		return nil, errors.New("catalog: nil fs.FS")
	}
	return build(&source{fsys: fsys}, opts, nil)
}

// OpenDir builds a catalog from a directory through os.OpenRoot, so that
// nothing outside the directory is ever read, even through a symbolic link
// created after the catalog was built. If the directory itself holds a
// SKILL.md, it is published under its name (the directory's name, which
// may be anything, is only compared with it), so that a single skill
// directory can be served on its own.
func OpenDir(dir string, opts *Options) (*Catalog, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	src := &source{fsys: root.FS(), root: root, dir: dir}
	return build(src, opts, nil)
}

// FileNameSKILL is the entry file of a skill.
const FileNameSKILL = skill.FileName

// Reload builds a new snapshot of the same tree with the same options.
// Digests of files whose size, modification time and inode are unchanged are
// reused, so reloading an unchanged tree costs a directory walk.
func (c *Catalog) Reload() (*Catalog, error) {
	next, err := build(c.src, &c.opts, c)
	if err != nil {
		return nil, err
	}
	return next.shareUnchanged(c), nil
}

// ReloadFS builds a snapshot of another tree with the same options, reusing
// the digests of this snapshot's files where the new tree's files carry the
// same content id (see [ContentIdentifier]) and size, so that the next
// commit of a git repository costs only the blobs it changed. Files of trees
// without content ids are all read again.
func (c *Catalog) ReloadFS(fsys fs.FS) (*Catalog, error) {
	if fsys == nil {
		return nil, errors.New("catalog: nil fs.FS")
	}
	next, err := build(&source{fsys: fsys}, &c.opts, c)
	if err != nil {
		return nil, err
	}
	return next.shareUnchanged(c), nil
}

// SourceDir returns the directory the catalog was opened from with
// [OpenDir], or "".
func (c *Catalog) SourceDir() string { return c.src.dir }

// Close releases the directory handle [OpenDir] holds, which every snapshot
// reloaded from this one shares: call it once, when no snapshot of the tree
// will be read again. Reads after Close fail; Close of a catalog built by
// [Open] from another fs.FS does nothing. It is safe to call more than once.
func (c *Catalog) Close() error {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	if c.src.root == nil || c.src.closed {
		return nil
	}
	c.src.closed = true
	return c.src.root.Close()
}

// ReadFile returns the bytes of a published file. They always match the
// file's Size and Digest: if the file changed on disk since the snapshot was
// built, ReadFile returns an error wrapping [ErrChanged] and the caller
// should serve from a fresh snapshot (see [Catalog.Reload]). At most Size+1
// bytes are read.
func (c *Catalog) ReadFile(f *File) ([]byte, error) {
	if f == nil || c.files[f.URI] != f {
		return nil, fmt.Errorf("catalog: %w", ErrNotFound)
	}
	data, err := c.readExact(f.Path, f.Size)
	if err != nil {
		if errors.Is(err, ErrChanged) {
			c.src.markDirty(f.Path)
		}
		return nil, fmt.Errorf("catalog: %s: %w", f.Path, err)
	}
	sum := sha256.Sum256(data)
	if "sha256:"+hex.EncodeToString(sum[:]) != f.Digest {
		c.src.markDirty(f.Path)
		return nil, fmt.Errorf("catalog: %s: %w", f.Path, ErrChanged)
	}
	return data, nil
}

// readExact reads a regular file expected to hold size bytes.
func (c *Catalog) readExact(name string, size int64) ([]byte, error) {
	// Refuse anything that is no longer a regular file before opening it: a
	// FIFO swapped in would block the open forever.
	fi, err := fs.Stat(c.src.fsys, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrChanged
		}
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, ErrChanged
	}
	fh, err := c.src.fsys.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrChanged
		}
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	defer fh.Close()
	var buf bytes.Buffer
	buf.Grow(int(size) + 1)
	n, err := io.Copy(&buf, io.LimitReader(fh, size+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	if n != size {
		return nil, ErrChanged
	}
	return buf.Bytes(), nil
}

// escapes reports whether a symlink target, relative to the link's directory,
// leaves the tree.
func escapes(linkDir, target string) bool {
	if target == "" || path.IsAbs(target) || filepath.IsAbs(target) {
		return true
	}
	j := path.Join(linkDir, target)
	return j == ".." || len(j) >= 3 && j[:3] == "../"
}
