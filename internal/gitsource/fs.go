package gitsource

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// ErrSymlinkNotFollowed is what opening a symbolic link of a commit returns:
// a link blob is a link, and following it would serve bytes that are not
// the blob's. The catalog reports such links like those of a directory.
var ErrSymlinkNotFollowed = errors.New("symbolic links in a git tree are not followed; replace the link with a copy of the file")

// lfsPrefix starts every Git LFS pointer file (https://git-lfs.com/spec/v1).
const lfsPrefix = "version https://git-lfs.github.com/spec/"

// maxLFSPointer is the largest blob examined for being an LFS pointer; the
// specification keeps pointers under 1024 bytes.
const maxLFSPointer = 1024

// FS is the tree of one commit as an fs.FS: the bytes read are the blob
// bytes, never a working copy that could drift. Symbolic link blobs are
// links (ReadLink and Lstat answer; Open and Stat refuse to follow them);
// submodules and Git LFS pointer files are irregular entries whose
// fs.FileInfo.Sys() explains them (see catalog.Explainer), so they are
// reported and not served as content. Each file's Sys() also carries its
// blob id (catalog.ContentIdentifier), so a catalog of the next commit
// re-hashes only changed blobs. FS is safe for concurrent use.
type FS struct {
	// stores are readers of one object store, each used by one goroutine
	// at a time: go-git's open pack files are not safe for concurrent use,
	// and several readers let the catalog read blobs in parallel.
	stores chan storer.EncodedObjectStorer
	// packs, when set, reads most objects without a store.
	packs  *packReader
	commit plumbing.Hash
	root   plumbing.Hash
	when   time.Time
	objs   *objectCache

	faultMu sync.Mutex
	fault   error // the first integrityError met
}

// check records err if it is the first integrityError met, and returns it.
func (f *FS) check(err error) error {
	if err != nil && isDamaged(err) {
		f.faultMu.Lock()
		if f.fault == nil {
			f.fault = err
		}
		f.faultMu.Unlock()
	}
	return err
}

// Fault returns the first damaged object or forged tree met while reading,
// nil if none: the catalog leaves a folder it cannot list out quietly, and
// a build from a damaged mirror must not pass for a sound one.
func (f *FS) Fault() error {
	f.faultMu.Lock()
	defer f.faultMu.Unlock()
	return f.fault
}

// objectCache keeps decoded trees and blob sizes by object id. Objects
// never change, so one cache serves every commit of a repository, and a
// new commit decodes only the trees it changed.
type objectCache struct {
	// published, when set, gives the size of a blob that an earlier
	// snapshot published as a file (so it is no LFS pointer), sparing a
	// read of a small blob to check.
	published func(plumbing.Hash) (int64, bool)

	mu    sync.Mutex
	trees map[plumbing.Hash]*treeIndex
	blobs map[plumbing.Hash]blobInfo
	// small holds the bytes of small blobs decompressed to tell whether
	// they are LFS pointers, until the catalog reads them (right after, in
	// the same directory visit), so that no blob is decompressed twice.
	small      map[plumbing.Hash][]byte
	smallBytes int
	// fresh are the objects of the pack fetched last, decompressed while
	// it was indexed, until the build of its commit is done with them.
	fresh map[plumbing.Hash]plumbing.EncodedObject
}

func (c *objectCache) setFresh(m map[plumbing.Hash]plumbing.EncodedObject) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fresh = m
}

func (c *objectCache) freshObject(h plumbing.Hash) plumbing.EncodedObject {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fresh[h]
}

// maxSmallBytes bounds what objectCache.small holds; past it, blobs are
// decompressed again when read.
var maxSmallBytes = 16 << 20

func (c *objectCache) putSmall(h plumbing.Hash, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.smallBytes+len(data) > maxSmallBytes {
		return
	}
	if c.small == nil {
		c.small = map[plumbing.Hash][]byte{}
	}
	if _, ok := c.small[h]; !ok {
		c.small[h] = data
		c.smallBytes += len(data)
	}
}

// dropSmall forgets the small blobs a build did not read, and the objects
// of the pack fetched for it.
func (c *objectCache) dropSmall() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.small, c.smallBytes, c.fresh = nil, 0, nil
}

// takeSmall returns and forgets the kept bytes of a small blob.
func (c *objectCache) takeSmall(h plumbing.Hash) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, ok := c.small[h]
	if ok {
		delete(c.small, h)
		c.smallBytes -= len(data)
	}
	return data, ok
}

// treeIndex is a decoded tree with its entries by name.
type treeIndex struct {
	*object.Tree
	byName map[string]int // nil for a small tree, searched in order
}

// smallTree is the most entries a tree has that is searched in order:
// most folders of a skill hold a few files, and a map for each costs
// more than it saves.
const smallTree = 8

// newTreeIndex indexes a tree, refusing one that lists a name twice: git
// never writes one, and a folder holding two SKILL.md files (or a file
// and a folder of one name) has no single meaning to serve.
func newTreeIndex(t *object.Tree) (*treeIndex, error) {
	ti := &treeIndex{Tree: t}
	if len(t.Entries) > smallTree {
		ti.byName = make(map[string]int, len(t.Entries))
		for i, e := range t.Entries {
			if _, ok := ti.byName[e.Name]; ok {
				return nil, dupError(t.Hash, e.Name)
			}
			ti.byName[e.Name] = i
		}
		return ti, nil
	}
	for i, e := range t.Entries {
		for _, o := range t.Entries[:i] {
			if o.Name == e.Name {
				return nil, dupError(t.Hash, e.Name)
			}
		}
	}
	return ti, nil
}

func dupError(h plumbing.Hash, name string) error {
	return &integrityError{fmt.Sprintf("tree %s lists %q twice, which git never writes: the repository is damaged or forged (git fsck finds it); fix it at the remote", short(h), name)}
}

// find returns the index of the entry named name.
func (t *treeIndex) find(name string) (int, bool) {
	if t.byName != nil {
		i, ok := t.byName[name]
		return i, ok
	}
	for i := range t.Entries {
		if t.Entries[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// maxCached bounds each map of an objectCache; past it the map starts over.
var maxCached = 1 << 20

func (c *objectCache) tree(h plumbing.Hash) *treeIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trees[h]
}

func (c *objectCache) putTree(h plumbing.Hash, t *treeIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trees == nil || len(c.trees) >= maxCached {
		c.trees = map[plumbing.Hash]*treeIndex{}
	}
	c.trees[h] = t
}

func (c *objectCache) blob(h plumbing.Hash) (blobInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	bi, ok := c.blobs[h]
	return bi, ok
}

func (c *objectCache) putBlob(h plumbing.Hash, bi blobInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.blobs == nil || len(c.blobs) >= maxCached {
		c.blobs = map[plumbing.Hash]blobInfo{}
	}
	c.blobs[h] = bi
}

type blobInfo struct {
	size int64
	lfs  bool
}

// NewFS returns the tree of commit, or of its folder subdir ("" for the
// root), read from st (a go-git repository's Storer).
func NewFS(st storer.EncodedObjectStorer, commit plumbing.Hash, subdir string) (*FS, error) {
	stores := make(chan storer.EncodedObjectStorer, 1)
	stores <- st
	return newFS(stores, nil, commit, subdir, &objectCache{})
}

func newFS(stores chan storer.EncodedObjectStorer, packs *packReader, commit plumbing.Hash, subdir string, objs *objectCache) (*FS, error) {
	f := &FS{stores: stores, packs: packs, commit: commit, objs: objs}
	var c *object.Commit
	var err error
	if o := objs.freshObject(commit); o != nil && o.Type() == plumbing.CommitObject {
		c, err = object.DecodeCommit(nil, o)
	} else if typ, data, perr := packs.object(commit); perr == nil && typ == plumbing.CommitObject {
		c, err = object.DecodeCommit(nil, &packObject{h: commit, t: typ, data: data})
	} else if isDamaged(perr) {
		err = perr
	} else {
		err = f.with(func(st storer.EncodedObjectStorer) (err error) {
			c, err = object.GetCommit(st, commit)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", commit, err)
	}
	f.root, f.when = c.TreeHash, c.Committer.When
	if subdir = strings.Trim(subdir, "/"); subdir != "" && subdir != "." {
		e, err := f.lookup("open", subdir)
		if err != nil {
			return nil, fmt.Errorf("commit %s has no folder %q: %w", short(commit), subdir, fs.ErrNotExist)
		}
		if e.Mode != filemode.Dir {
			return nil, fmt.Errorf("commit %s: %q is not a folder", short(commit), subdir)
		}
		f.root = e.Hash
	}
	return f, nil
}

// with runs fn with a reader of the object store to itself.
func (f *FS) with(fn func(storer.EncodedObjectStorer) error) error {
	st := <-f.stores
	defer func() { f.stores <- st }()
	return fn(st)
}

// Commit returns the commit whose tree this is.
func (f *FS) Commit() plumbing.Hash { return f.commit }

func (f *FS) tree(h plumbing.Hash) (*treeIndex, error) {
	if t := f.objs.tree(h); t != nil {
		return t, nil
	}
	var t *object.Tree
	var err error
	if o := f.objs.freshObject(h); o != nil && o.Type() == plumbing.TreeObject {
		var data []byte
		if data, err = readObject(o); err == nil {
			t, err = parseTree(h, data)
		}
	} else if typ, data, perr := f.packs.object(h); perr == nil && typ == plumbing.TreeObject {
		t, err = parseTree(h, data)
	} else if isDamaged(perr) {
		err = perr
	} else {
		err = f.with(func(st storer.EncodedObjectStorer) (err error) {
			t, err = object.GetTree(st, h)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	ti, err := newTreeIndex(t)
	if err != nil {
		return nil, err
	}
	f.objs.putTree(h, ti)
	return ti, nil
}

// blob returns a blob's size and whether it is an LFS pointer.
func (f *FS) blob(h plumbing.Hash) (blobInfo, error) {
	if bi, ok := f.objs.blob(h); ok {
		return bi, nil
	}
	var bi blobInfo
	if f.objs.published != nil {
		if size, ok := f.objs.published(h); ok {
			bi.size = size
			f.objs.putBlob(h, bi)
			return bi, nil
		}
	}
	if o := f.objs.freshObject(h); o != nil && o.Type() == plumbing.BlobObject {
		return f.blobInfo(h, o)
	}
	if typ, size, err := f.packs.size(h); err == nil && typ == plumbing.BlobObject {
		if size > maxLFSPointer || size < int64(len(lfsPrefix)) {
			bi.size = size
			f.objs.putBlob(h, bi)
			return bi, nil
		}
		_, data, err := f.packs.object(h)
		if isDamaged(err) {
			return bi, err
		}
		if err == nil && int64(len(data)) == size {
			if blobRead != nil {
				blobRead(h)
			}
			return f.classify(h, size, data, true), nil
		}
	}
	st := <-f.stores
	defer func() { f.stores <- st }()
	// The size is in the pack's object header: only a blob that may be an
	// LFS pointer needs to be decompressed here.
	if sz, ok := st.(interface {
		EncodedObjectSize(plumbing.Hash) (int64, error)
	}); ok {
		size, err := sz.EncodedObjectSize(h)
		if err == nil && (size > maxLFSPointer || size < int64(len(lfsPrefix))) {
			bi.size = size
			f.objs.putBlob(h, bi)
			return bi, nil
		}
	}
	if blobRead != nil {
		blobRead(h)
	}
	o, err := st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return bi, err
	}
	return f.blobInfo(h, o)
}

// blobInfo tells a blob's size and whether it is an LFS pointer, keeping
// a small blob's bytes for the read that follows.
func (f *FS) blobInfo(h plumbing.Hash, o plumbing.EncodedObject) (blobInfo, error) {
	size := o.Size()
	var data []byte
	if size <= maxLFSPointer && size >= int64(len(lfsPrefix)) {
		var err error
		if data, err = readObject(o); err != nil {
			return blobInfo{size: size}, err
		}
	}
	return f.classify(h, size, data, f.objs.freshObject(h) == nil), nil
}

// classify records a blob's size and whether it is an LFS pointer, given
// its bytes when it is small enough to be one; keep keeps them for the
// read that follows.
func (f *FS) classify(h plumbing.Hash, size int64, data []byte, keep bool) blobInfo {
	bi := blobInfo{size: size}
	if data != nil {
		bi.lfs = bytes.HasPrefix(data, []byte(lfsPrefix))
		if !bi.lfs && keep {
			f.objs.putSmall(h, data)
		}
	}
	f.objs.putBlob(h, bi)
	return bi
}

// readObject reads an object's content whole. The bytes of an object of
// a pack just indexed are its own, not a copy: they are only read.
func readObject(o plumbing.EncodedObject) ([]byte, error) {
	if po, ok := o.(*packObject); ok {
		return po.data, nil
	}
	if o.Size() > maxObjectSize || o.Size() < 0 {
		return nil, fmt.Errorf("object %s declares %d bytes, over the %d MiB a skill's files may total", o.Hash(), o.Size(), maxObjectSize>>20)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, o.Size())
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}

// lookup finds the entry at name; the root is a directory entry.
func (f *FS) lookup(op, name string) (object.TreeEntry, error) {
	if !fs.ValidPath(name) {
		return object.TreeEntry{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	e := object.TreeEntry{Name: ".", Mode: filemode.Dir, Hash: f.root}
	if name == "." {
		return e, nil
	}
	for _, seg := range strings.Split(name, "/") {
		if e.Mode != filemode.Dir {
			return object.TreeEntry{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		t, err := f.tree(e.Hash)
		if err != nil {
			return object.TreeEntry{}, f.check(&fs.PathError{Op: op, Path: name, Err: err})
		}
		i, found := t.find(seg)
		if found {
			e = t.Entries[i]
		}
		if !found {
			return object.TreeEntry{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
	}
	return e, nil
}

// info describes an entry.
func (f *FS) info(e object.TreeEntry) (*fileInfo, error) {
	fi := &fileInfo{name: e.Name, hash: e.Hash, when: f.when}
	switch e.Mode {
	case filemode.Dir:
		fi.mode = fs.ModeDir | 0o555
	case filemode.Symlink:
		fi.mode = fs.ModeSymlink | 0o777
		bi, err := f.blob(e.Hash)
		if err != nil {
			return nil, err
		}
		fi.size = bi.size
	case filemode.Submodule:
		fi.mode = fs.ModeIrregular
		fi.why = fmt.Sprintf("git submodule (commit %s of another repository): its files are not in this repository and are not served; copy them in to publish them", short(e.Hash))
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
		bi, err := f.blob(e.Hash)
		if err != nil {
			return nil, err
		}
		fi.size = bi.size
		fi.mode = 0o444
		if e.Mode == filemode.Executable {
			fi.mode = 0o555
		}
		if bi.lfs {
			fi.mode = fs.ModeIrregular
			fi.why = "Git LFS pointer file: the content lives in LFS storage, which is not fetched; the pointer is not served as if it were the file (commit the file itself to publish it)"
		}
	default:
		fi.mode = fs.ModeIrregular
		fi.why = fmt.Sprintf("git tree entry of unknown mode %o; skipped", uint32(e.Mode))
	}
	return fi, nil
}

// Open implements fs.FS. Symbolic links are not followed.
func (f *FS) Open(name string) (fs.File, error) {
	e, err := f.lookup("open", name)
	if err != nil {
		return nil, err
	}
	fi, err := f.info(e)
	if err != nil {
		return nil, f.check(&fs.PathError{Op: "open", Path: name, Err: err})
	}
	switch {
	case fi.mode.IsDir():
		t, err := f.tree(e.Hash)
		if err != nil {
			return nil, f.check(&fs.PathError{Op: "open", Path: name, Err: err})
		}
		return &dirFile{fs: f, fi: fi, tree: t, path: name}, nil
	case fi.mode&fs.ModeSymlink != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrSymlinkNotFollowed}
	case !fi.mode.IsRegular():
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New(fi.why)}
	}
	data, err := f.readBlob(e.Hash, fi.size)
	if err != nil {
		return nil, f.check(&fs.PathError{Op: "open", Path: name, Err: err})
	}
	return &blobFile{fi: fi, r: bytes.NewReader(data)}, nil
}

// Stat implements fs.StatFS. Symbolic links are not followed.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	fi, err := f.Lstat(name)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: ErrSymlinkNotFollowed}
	}
	return fi, nil
}

// Lstat implements fs.ReadLinkFS.
func (f *FS) Lstat(name string) (fs.FileInfo, error) {
	e, err := f.lookup("lstat", name)
	if err != nil {
		return nil, err
	}
	fi, err := f.info(e)
	if err != nil {
		return nil, f.check(&fs.PathError{Op: "lstat", Path: name, Err: err})
	}
	return fi, nil
}

// ReadLink implements fs.ReadLinkFS: the target is the link blob's bytes.
func (f *FS) ReadLink(name string) (string, error) {
	e, err := f.lookup("readlink", name)
	if err != nil {
		return "", err
	}
	if e.Mode != filemode.Symlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	bi, err := f.blob(e.Hash)
	if err != nil {
		return "", f.check(&fs.PathError{Op: "readlink", Path: name, Err: err})
	}
	if bi.size > maxLinkTarget {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: errors.New("link target longer than 4096 bytes")}
	}
	b, err := f.readBlob(e.Hash, bi.size)
	if err != nil {
		return "", f.check(&fs.PathError{Op: "readlink", Path: name, Err: err})
	}
	return string(b), nil
}

// ReadDir implements fs.ReadDirFS; entries are sorted by name.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	e, err := f.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if e.Mode != filemode.Dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	t, err := f.tree(e.Hash)
	if err != nil {
		return nil, f.check(&fs.PathError{Op: "readdir", Path: name, Err: err})
	}
	return f.entries(t, name), nil
}

func (f *FS) entries(t *treeIndex, name string) []fs.DirEntry {
	if dirListed != nil {
		dirListed(name)
	}
	out := make([]fs.DirEntry, len(t.Entries))
	for i, e := range t.Entries {
		out[i] = &dirEntry{fs: f, e: e}
	}
	// Git sorts trees with directories as if their names ended in "/";
	// fs.ReadDir promises plain name order.
	sortEntries(out)
	return out
}

func sortEntries(es []fs.DirEntry) {
	slices.SortFunc(es, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}

// dirEntry is a tree entry; its size is looked up only when Info is called.
type dirEntry struct {
	fs *FS
	e  object.TreeEntry
}

func (d *dirEntry) Name() string { return d.e.Name }
func (d *dirEntry) IsDir() bool  { return d.e.Mode == filemode.Dir }
func (d *dirEntry) Type() fs.FileMode {
	switch d.e.Mode {
	case filemode.Dir:
		return fs.ModeDir
	case filemode.Symlink:
		return fs.ModeSymlink
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
		fi, err := d.Info()
		if err != nil {
			return 0 // Info reports the error again
		}
		return fi.Mode().Type()
	}
	return fs.ModeIrregular
}
func (d *dirEntry) Info() (fs.FileInfo, error) {
	fi, err := d.fs.info(d.e)
	return fi, d.fs.check(err)
}

// fileInfo describes a tree entry. Its Sys() is itself, carrying the blob
// id and, for irregular entries, why they are not served.
type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
	hash plumbing.Hash
	when time.Time
	why  string
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.size }
func (fi *fileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi *fileInfo) ModTime() time.Time { return fi.when }
func (fi *fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *fileInfo) Sys() any           { return fi }

// ContentID implements catalog.ContentIdentifier: the git object id.
func (fi *fileInfo) ContentID() string { return fi.hash.String() }

// Explain implements catalog.Explainer.
func (fi *fileInfo) Explain() string { return fi.why }

// blobRead, when set (by tests), is called with each blob whose content
// is read, to check that a build reads only what it must.
var blobRead func(plumbing.Hash)

// dirListed, when set (by tests), is called with each folder listed.
var dirListed func(string)

// maxLinkTarget bounds a symbolic link's target, as PATH_MAX does.
const maxLinkTarget = 4096

// readBlob reads a whole blob of the given size; a blob that is not that
// size is an error. Files are read whole, under the store's lock, and
// served from memory: a skill's files are bounded by the catalog's
// per-skill limit, which it checks on the sizes before opening anything.
func (f *FS) readBlob(h plumbing.Hash, size int64) ([]byte, error) {
	if data, ok := f.objs.takeSmall(h); ok && int64(len(data)) == size {
		return data, nil
	}
	if blobRead != nil {
		blobRead(h)
	}
	o := f.objs.freshObject(h)
	if o == nil || o.Type() != plumbing.BlobObject {
		typ, data, err := f.packs.object(h)
		if isDamaged(err) {
			return nil, err
		}
		if err == nil && typ == plumbing.BlobObject {
			if int64(len(data)) != size {
				return nil, fmt.Errorf("blob %s is %d bytes, not %d", h, len(data), size)
			}
			return data, nil
		}
		st := <-f.stores
		defer func() { f.stores <- st }()
		if o, err = st.EncodedObject(plumbing.BlobObject, h); err != nil {
			return nil, err
		}
	}
	if o.Size() != size {
		return nil, fmt.Errorf("blob %s is %d bytes, not %d", h, o.Size(), size)
	}
	data, err := readObject(o)
	if err == nil && f.packs != nil && f.objs.freshObject(h) == nil && objectID(plumbing.BlobObject, data) != h {
		// go-git's store reads by offset too, without checking.
		return nil, &integrityError{fmt.Sprintf("blob %s read from the mirror is another object: the cache is damaged; delete %s to fetch afresh",
			h, filepath.Dir(filepath.Dir(f.packs.dir)))}
	}
	return data, err
}

type blobFile struct {
	fi *fileInfo
	r  *bytes.Reader
}

func (b *blobFile) Stat() (fs.FileInfo, error) { return b.fi, nil }
func (b *blobFile) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *blobFile) Close() error               { return nil }

type dirFile struct {
	fs   *FS
	fi   *fileInfo
	tree *treeIndex
	path string
	off  int
	ents []fs.DirEntry
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.fi, nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.path, Err: errors.New("is a directory")}
}
func (d *dirFile) Close() error { return nil }

// ReadDir implements fs.ReadDirFile.
func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.ents == nil {
		d.ents = d.fs.entries(d.tree, d.path)
	}
	rest := d.ents[d.off:]
	if n <= 0 {
		d.off = len(d.ents)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.off += n
	return rest[:n], nil
}

// short abbreviates a commit id for messages.
func short(h plumbing.Hash) string { return h.String()[:12] }

var _ fs.ReadLinkFS = (*FS)(nil)
var _ fs.ReadDirFS = (*FS)(nil)
var _ fs.StatFS = (*FS)(nil)
