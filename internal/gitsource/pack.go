package gitsource

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sync"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// maxPackMemory bounds the objects a fetched pack keeps in memory for the
// build that follows, and the copy of the pack itself held while it is
// indexed (so a fetch holds at most twice this). A pack larger than that,
// or whose objects are (or inflate past it, as a hostile one would), is
// indexed from the file by go-git's parser, and its objects are then read
// from the mirror.
var maxPackMemory int64 = 128 << 20

// errPackMemory stops indexing a pack whose objects do not fit in memory.
var errPackMemory = errors.New("pack objects over the memory bound")

// mirrorStorage is a mirror's object store whose fetches index each pack
// once (indexPack) and keep its objects, decompressed, for the build of
// the commit just fetched: go-git's own pack writer decompresses every
// object twice to index it, and the build would decompress it a third
// time to read it.
type mirrorStorage struct {
	*filesystem.Storage
	fs billy.Filesystem
	// keep receives the objects of each pack fetched, if they fit.
	keep func(map[plumbing.Hash]plumbing.EncodedObject)
	// packs, when set, tells which objects the packs hold.
	packs *packReader
	// maxFetch bounds the bytes one fetch writes; zero means
	// DefaultMaxFetch.
	maxFetch int64

	mu sync.Mutex
	// commits are those of the packs fetched (a bounded number), which
	// resolving the ref and negotiating the next fetch look up: answering
	// them here spares reloading every pack index after each fetch.
	commits map[plumbing.Hash]plumbing.EncodedObject
	// stale is set when a pack was added since the indexes were loaded;
	// the first object not found that the new packs hold reloads them.
	stale bool
}

// maxKeptCommits bounds mirrorStorage.commits; past it, it starts over.
var maxKeptCommits = 4096

func (m *mirrorStorage) keepCommits(objs map[plumbing.Hash]plumbing.EncodedObject) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, o := range objs {
		if o.Type() != plumbing.CommitObject {
			continue
		}
		if m.commits == nil || len(m.commits) >= maxKeptCommits {
			m.commits = map[plumbing.Hash]plumbing.EncodedObject{}
		}
		m.commits[h] = o
	}
}

func (m *mirrorStorage) commit(h plumbing.Hash) plumbing.EncodedObject {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.commits[h]
}

// reindex reloads the pack indexes if a pack was added since they were
// loaded and holds h, and reports whether it did. An object in no pack
// (the commit a fetch is about to ask for) does not cost a reload of
// every index: the pack reader, which loads only new ones, says so.
func (m *mirrorStorage) reindex(h plumbing.Hash) bool {
	m.mu.Lock()
	stale := m.stale
	m.mu.Unlock()
	if !stale {
		return false
	}
	if m.packs != nil {
		m.packs.refresh()
		if _, _, ok := m.packs.find(h); !ok {
			return false
		}
	}
	m.mu.Lock()
	m.stale = false
	m.mu.Unlock()
	m.Storage.Reindex()
	return true
}

// EncodedObject implements storer.EncodedObjectStorer.
func (m *mirrorStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if t == plumbing.CommitObject || t == plumbing.AnyObject {
		if o := m.commit(h); o != nil {
			return o, nil
		}
	}
	if o, err := m.packed(t, h); o != nil || err != nil {
		return o, err
	}
	o, err := m.Storage.EncodedObject(t, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) && m.reindex(h) {
		if o, err := m.packed(t, h); o != nil || err != nil {
			return o, err
		}
		o, err = m.Storage.EncodedObject(t, h)
	}
	return o, err
}

// packed reads h of type t (or any) with the pack reader, or returns nil
// (and an error only for a damaged mirror): go-git's store would load
// every pack index, and build a map of every offset, for the few objects
// (commits, tags) it is asked for.
func (m *mirrorStorage) packed(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	typ, data, err := m.packs.object(h)
	if isDamaged(err) {
		return nil, err
	}
	if err != nil || t != plumbing.AnyObject && t != typ {
		return nil, nil
	}
	return &packObject{h: h, t: typ, data: data}, nil
}

// HasEncodedObject implements storer.EncodedObjectStorer.
func (m *mirrorStorage) HasEncodedObject(h plumbing.Hash) error {
	if m.commit(h) != nil {
		return nil
	}
	if _, _, ok := m.packs.find(h); ok {
		return nil
	}
	err := m.Storage.HasEncodedObject(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) && m.reindex(h) {
		err = m.Storage.HasEncodedObject(h)
	}
	return err
}

// EncodedObjectSize implements storer.EncodedObjectStorer.
func (m *mirrorStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if o := m.commit(h); o != nil {
		return o.Size(), nil
	}
	if _, n, err := m.packs.size(h); err == nil {
		return n, nil
	}
	n, err := m.Storage.EncodedObjectSize(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) && m.reindex(h) {
		n, err = m.Storage.EncodedObjectSize(h)
	}
	return n, err
}

// PackfileWriter implements storer.PackfileWriter: the pack received is
// written to a temporary file and indexed when it is closed.
func (m *mirrorStorage) PackfileWriter() (io.WriteCloser, error) {
	if err := m.fs.MkdirAll(path.Join("objects", "pack"), 0o700); err != nil {
		return nil, err
	}
	f, err := m.fs.TempFile(path.Join("objects", "pack"), "tmp_pack_")
	if err != nil {
		return nil, err
	}
	return &packWriter{m: m, f: f}, nil
}

type packWriter struct {
	m *mirrorStorage
	f billy.File
	n int64
	// buf holds what was written, for indexPack, until it passes
	// maxPackMemory.
	buf  []byte
	over bool
	// failed is set once the pack passed the fetch's cap.
	failed error
}

func (w *packWriter) Write(p []byte) (int, error) {
	if w.failed != nil {
		return 0, w.failed
	}
	limit := w.m.maxFetch
	if limit <= 0 {
		limit = DefaultMaxFetch
	}
	if w.n+int64(len(p)) > limit {
		w.failed = fmt.Errorf("%w: the remote sent more than %d bytes in one fetch (the cap on what a fetch writes to the cache directory)", errFetchTooLarge, limit)
		return 0, w.failed
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	if !w.over {
		if int64(len(w.buf)+n) > maxPackMemory {
			w.buf, w.over = nil, true
		} else {
			if len(w.buf)+n > cap(w.buf) {
				// Grow as append does, but never past the bound.
				nb := make([]byte, len(w.buf), min(max(2*cap(w.buf), len(w.buf)+n, 64<<10), int(maxPackMemory)))
				copy(nb, w.buf)
				w.buf = nb
			}
			w.buf = append(w.buf, p[:n]...)
		}
	}
	return n, err
}

// Close indexes the pack and moves it and its index into place.
func (w *packWriter) Close() (err error) {
	name := w.f.Name()
	defer func() {
		if err != nil {
			w.m.fs.Remove(name)
		}
	}()
	if err := w.f.Close(); err != nil {
		return err
	}
	if w.failed != nil {
		return w.failed
	}
	if w.n == 0 {
		return w.m.fs.Remove(name)
	}
	var objs map[plumbing.Hash]plumbing.EncodedObject
	var idx *idxfile.MemoryIndex
	var sum plumbing.Hash
	err = errPackMemory
	if !w.over {
		objs, idx, sum, err = indexPack(w.buf)
		w.buf = nil
	}
	if errors.Is(err, errPackMemory) || errors.Is(err, errThinPack) {
		// Over the memory bound, or thin: index it as go-git does, from
		// the file. A pack refused for what it declares or holds is not
		// given another chance there.
		objs, idx, sum, err = w.index(name)
	}
	if err != nil {
		return fmt.Errorf("indexing the fetched pack: %w", err)
	}
	base := path.Join("objects", "pack", "pack-"+sum.String())
	if _, serr := w.m.fs.Lstat(base + ".idx"); serr != nil {
		fh, err := w.m.fs.Create(base + ".idx.tmp")
		if err != nil {
			return err
		}
		_, err = idxfile.NewEncoder(fh).Encode(idx)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = w.m.fs.Rename(base+".idx.tmp", base+".idx")
		}
		if err != nil {
			w.m.fs.Remove(base + ".idx.tmp")
			return err
		}
	}
	if _, serr := w.m.fs.Lstat(base + ".pack"); serr == nil {
		w.m.fs.Remove(name) // the same pack is there already
	} else if err := w.m.fs.Rename(name, base+".pack"); err != nil {
		return err
	}
	w.m.mu.Lock()
	w.m.stale = true
	w.m.mu.Unlock()
	if objs != nil {
		w.m.keepCommits(objs)
		if w.m.keep != nil {
			w.m.keep(objs)
		}
	}
	return nil
}

// index indexes the pack file with go-git's parser, keeping no objects.
func (w *packWriter) index(name string) (map[plumbing.Hash]plumbing.EncodedObject, *idxfile.MemoryIndex, plumbing.Hash, error) {
	fh, err := w.m.fs.Open(name)
	if err != nil {
		return nil, nil, plumbing.ZeroHash, err
	}
	defer fh.Close()
	// go-git trusts what the pack declares: check it first.
	if err := checkPack(fh, w.n); err != nil {
		return nil, nil, plumbing.ZeroHash, err
	}
	iw := new(idxfile.Writer)
	p, err := packfile.NewParser(packfile.NewScanner(fh), iw)
	if err != nil {
		return nil, nil, plumbing.ZeroHash, err
	}
	sum, err := p.Parse()
	if err != nil {
		return nil, nil, plumbing.ZeroHash, err
	}
	idx, err := iw.Index()
	return nil, idx, sum, err
}
