package gitsource

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// packReader reads objects straight from a mirror's pack files, by offset,
// with positioned reads that need no lock: a commit's tree is read by many
// goroutines at once, and go-git's readers (a scanner per open pack,
// serialised, re-indexing every pack after each fetch) cost a start from
// the mirror more than the catalog build itself. Packs never change once
// written, so each index is loaded once per process. Anything this reader
// does not handle (loose objects, objects over largeObject, long delta
// chains, a damaged pack) is left to go-git: the caller falls back on
// errSlowPath.
type packReader struct {
	dir string // the mirror's objects/pack

	mu    sync.RWMutex
	packs []*packIndex
	seen  map[string]bool

	bases baseCache
}

// errSlowPath says an object is to be read through go-git.
var errSlowPath = errors.New("object not readable by the pack reader")

// maxDeltaDepth bounds the delta chains the pack reader follows (git's
// default is 50); longer ones are read through go-git.
var maxDeltaDepth = 64

type packIndex struct {
	f    packFile
	size int64
	idx  *idxfile.MemoryIndex
}

// packFile is an open pack.
type packFile interface {
	io.ReaderAt
	io.Closer
}

func newPackReader(gitDir string) *packReader {
	return &packReader{dir: filepath.Join(gitDir, "objects", "pack"), seen: map[string]bool{}}
}

// refresh loads the indexes of packs added since the last call. A pack
// that cannot be loaded is skipped: its objects are read through go-git.
func (r *packReader) refresh() {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "pack-") || !strings.HasSuffix(name, ".idx") {
			continue
		}
		r.mu.RLock()
		seen := r.seen[name]
		r.mu.RUnlock()
		if seen {
			continue
		}
		p, err := openPackIndex(filepath.Join(r.dir, name))
		r.mu.Lock()
		r.seen[name] = true
		if err == nil {
			// Newest first: a fresh pack is where new objects are.
			r.packs = append([]*packIndex{p}, r.packs...)
		}
		r.mu.Unlock()
	}
}

func openPackIndex(idxPath string) (*packIndex, error) {
	fh, err := os.Open(idxPath)
	if err != nil {
		return nil, err
	}
	idx := idxfile.NewMemoryIndex()
	err = idxfile.NewDecoder(bufio.NewReaderSize(fh, 64<<10)).Decode(idx)
	fh.Close()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(strings.TrimSuffix(idxPath, ".idx") + ".pack")
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &packIndex{f: f, size: fi.Size(), idx: idx}, nil
}

// close closes the pack files; the reader is unusable after.
func (r *packReader) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.packs {
		p.f.Close()
	}
	r.packs = nil
}

// offset finds h in the pack's index (go-git's FindOffset also records
// every answer in a map under a lock, which costs more than the search).
func (p *packIndex) offset(h plumbing.Hash) (int64, bool) {
	k := p.idx.FanoutMapping[h[0]]
	if k < 0 || k >= len(p.idx.Names) || k >= len(p.idx.Offset32) {
		return 0, false
	}
	names := p.idx.Names[k]
	lo, hi := 0, len(names)/20
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(names[mid*20:mid*20+20], h[:]); {
		case c == 0:
			o32 := p.idx.Offset32[k]
			if len(o32) < mid*4+4 {
				return 0, false
			}
			o := binary.BigEndian.Uint32(o32[mid*4:])
			if o&(1<<31) == 0 {
				return int64(o), true
			}
			i := 8 * int(o&^(1<<31))
			if i+8 > len(p.idx.Offset64) {
				return 0, false
			}
			return int64(binary.BigEndian.Uint64(p.idx.Offset64[i:])), true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false
}

func (r *packReader) find(h plumbing.Hash) (*packIndex, int64, bool) {
	if r == nil {
		return nil, 0, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, p := range r.packs {
		if off, ok := p.offset(h); ok {
			return p, off, true
		}
	}
	return nil, 0, false
}

// object returns the type and content of h. What was read at the offset
// the index gives is hashed and compared to h: an index that points
// elsewhere (a damaged or tampered cache) would otherwise serve bytes
// that are not in the commit.
func (r *packReader) object(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	p, off, ok := r.find(h)
	if !ok {
		return 0, nil, errSlowPath
	}
	typ, data, err := r.at(p, off, 0)
	if err == nil && objectID(typ, data) != h {
		return 0, nil, &integrityError{fmt.Sprintf("object %s read from the mirror's packs is another object: the cache is damaged; delete %s to fetch afresh",
			h, filepath.Dir(filepath.Dir(r.dir)))}
	}
	return typ, data, err
}

// objectID is git's id of an object, with the standard library's SHA-1:
// checking that what was read is the object asked for needs no defence
// against forged collisions (whoever can write the cache can write
// anything), and go-git's collision-detecting SHA-1 made the check cost a
// sixth of a start from the mirror.
func objectID(t plumbing.ObjectType, data []byte) plumbing.Hash {
	d := sha1.New()
	var head [32]byte
	b := append(head[:0], t.String()...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(data)), 10)
	d.Write(append(b, 0))
	d.Write(data)
	var h plumbing.Hash
	d.Sum(h[:0])
	return h
}

// integrityError says the objects read are not what git would hold: a
// damaged mirror, or a forged tree. No other reader of the same packs may
// paper over it, and a build that meets one fails (the last good commit
// stays served).
type integrityError struct{ msg string }

func (e *integrityError) Error() string { return e.msg }

// isDamaged reports whether err is an integrityError.
func isDamaged(err error) bool {
	var d *integrityError
	return errors.As(err, &d)
}

// size returns the size of h's content, reading no more than the headers.
func (r *packReader) size(h plumbing.Hash) (plumbing.ObjectType, int64, error) {
	p, off, ok := r.find(h)
	if !ok {
		return 0, 0, errSlowPath
	}
	hd, err := p.header(off)
	if err != nil {
		return 0, 0, err
	}
	if hd.typ != plumbing.OFSDeltaObject && hd.typ != plumbing.REFDeltaObject {
		return hd.typ, hd.size, nil
	}
	// A delta starts with the base's size and the result's: inflate
	// only as far as those two numbers.
	zr, release, err := p.inflate(hd.data)
	if err != nil {
		return 0, 0, err
	}
	defer release()
	br := byteReader{r: zr}
	if _, err := binary.ReadUvarint(&br); err != nil {
		return 0, 0, errSlowPath
	}
	n, err := binary.ReadUvarint(&br)
	if err != nil || n > largeObject {
		return 0, 0, errSlowPath
	}
	// The type is the base's: follow the chain's headers.
	typ, err := r.baseType(p, hd, 0)
	return typ, int64(n), err
}

func (r *packReader) baseType(p *packIndex, hd objHeader, depth int) (plumbing.ObjectType, error) {
	for ; depth < maxDeltaDepth; depth++ {
		switch hd.typ {
		case plumbing.OFSDeltaObject:
		case plumbing.REFDeltaObject:
			bp, off, ok := r.find(hd.ref)
			if !ok {
				return 0, errSlowPath
			}
			p, hd.base = bp, off
		default:
			return hd.typ, nil
		}
		var err error
		if hd, err = p.header(hd.base); err != nil {
			return 0, err
		}
	}
	return 0, errSlowPath
}

type byteReader struct{ r io.Reader }

func (b *byteReader) ReadByte() (byte, error) {
	var c [1]byte
	_, err := io.ReadFull(b.r, c[:])
	return c[0], err
}

// objHeader is a pack entry's header.
type objHeader struct {
	typ  plumbing.ObjectType
	size int64         // of the content, or of the delta
	data int64         // where the compressed data starts
	base int64         // an offset delta's base
	ref  plumbing.Hash // a reference delta's base
}

// header parses the entry at off.
func (p *packIndex) header(off int64) (objHeader, error) {
	var hd objHeader
	if off < 12 || off >= p.size {
		return hd, errSlowPath
	}
	var buf [64]byte
	n, err := p.f.ReadAt(buf[:], off)
	if n == 0 {
		return hd, fmt.Errorf("reading a pack: %w", err)
	}
	b := buf[:n]
	i := 0
	c := b[i]
	i++
	hd.typ = plumbing.ObjectType((c >> 4) & 7)
	size := int64(c & 15)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if i >= len(b) || shift > 56 {
			return hd, errSlowPath
		}
		c = b[i]
		i++
		size |= int64(c&0x7f) << shift
	}
	hd.size = size
	switch hd.typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		if i >= len(b) {
			return hd, errSlowPath
		}
		c = b[i]
		i++
		rel := int64(c & 0x7f)
		for c&0x80 != 0 {
			if i >= len(b) || rel > 1<<48 {
				return hd, errSlowPath
			}
			c = b[i]
			i++
			rel = ((rel + 1) << 7) | int64(c&0x7f)
		}
		if rel <= 0 || rel >= off {
			return hd, errSlowPath
		}
		hd.base = off - rel
	case plumbing.REFDeltaObject:
		if i+20 > len(b) {
			return hd, errSlowPath
		}
		copy(hd.ref[:], b[i:i+20])
		i += 20
	default:
		return hd, errSlowPath
	}
	hd.data = off + int64(i)
	return hd, nil
}

var (
	bufReaders  = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	zlibReaders sync.Pool
)

// inflate returns a reader of the zlib stream at off and a function that
// releases it.
func (p *packIndex) inflate(off int64) (io.Reader, func(), error) {
	br := bufReaders.Get().(*bufio.Reader)
	br.Reset(io.NewSectionReader(p.f, off, p.size-off))
	var zr io.ReadCloser
	var err error
	if z, ok := zlibReaders.Get().(io.ReadCloser); ok {
		err = z.(zlib.Resetter).Reset(br, nil)
		zr = z
	} else {
		zr, err = zlib.NewReader(br)
	}
	if err != nil {
		bufReaders.Put(br)
		return nil, nil, errSlowPath
	}
	return zr, func() {
		br.Reset(nil)
		bufReaders.Put(br)
		zlibReaders.Put(zr)
	}, nil
}

// readAll inflates exactly n bytes at off.
func (p *packIndex) readAll(off, n int64) ([]byte, error) {
	zr, release, err := p.inflate(off)
	if err != nil {
		return nil, err
	}
	defer release()
	data := make([]byte, n)
	if _, err := io.ReadFull(zr, data); err != nil {
		return nil, errSlowPath
	}
	// Reading to the end checks the stream's checksum: a damaged pack is
	// read through go-git, which reports it, never served.
	var more [1]byte
	if _, err := io.ReadFull(zr, more[:]); err != io.EOF {
		return nil, errSlowPath
	}
	return data, nil
}

// at reads the object at off, resolving deltas.
func (r *packReader) at(p *packIndex, off int64, depth int) (plumbing.ObjectType, []byte, error) {
	if depth > maxDeltaDepth {
		return 0, nil, errSlowPath
	}
	hd, err := p.header(off)
	if err != nil {
		return 0, nil, err
	}
	if hd.size > largeObject {
		return 0, nil, errSlowPath
	}
	switch hd.typ {
	case plumbing.OFSDeltaObject, plumbing.REFDeltaObject:
	default:
		data, err := p.readAll(hd.data, hd.size)
		return hd.typ, data, err
	}
	bp, boff := p, hd.base
	if hd.typ == plumbing.REFDeltaObject {
		var ok bool
		if bp, boff, ok = r.find(hd.ref); !ok {
			return 0, nil, errSlowPath
		}
	}
	typ, base, ok := r.bases.get(bp, boff)
	if !ok {
		if typ, base, err = r.at(bp, boff, depth+1); err != nil {
			return 0, nil, err
		}
		r.bases.put(bp, boff, typ, base)
	}
	delta, err := p.readAll(hd.data, hd.size)
	if err != nil {
		return 0, nil, err
	}
	if len(delta) < 2 {
		return 0, nil, errSlowPath
	}
	// The result's size is in the delta's header: refuse a large one
	// before building it.
	br := bytes.NewReader(delta)
	if _, err := binary.ReadUvarint(br); err != nil {
		return 0, nil, errSlowPath
	}
	if n, err := binary.ReadUvarint(br); err != nil || n > largeObject {
		return 0, nil, errSlowPath
	}
	data, err := packfile.PatchDelta(base, delta)
	if err != nil {
		return 0, nil, errSlowPath
	}
	return typ, data, nil
}

// baseCache keeps the bases that deltas were resolved against, bounded in
// bytes, oldest out first: the objects of one folder are often deltas of
// one another.
type baseCache struct {
	mu    sync.Mutex
	m     map[baseKey]baseEntry
	order []baseKey
	bytes int
}

type baseKey struct {
	p   *packIndex
	off int64
}

type baseEntry struct {
	typ  plumbing.ObjectType
	data []byte
}

// maxBaseCache bounds a baseCache.
const maxBaseCache = 16 << 20

func (c *baseCache) get(p *packIndex, off int64) (plumbing.ObjectType, []byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[baseKey{p, off}]
	return e.typ, e.data, ok
}

func (c *baseCache) put(p *packIndex, off int64, typ plumbing.ObjectType, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := baseKey{p, off}
	if _, ok := c.m[k]; ok || len(data) > maxBaseCache/4 {
		return
	}
	if c.m == nil {
		c.m = map[baseKey]baseEntry{}
	}
	for c.bytes+len(data) > maxBaseCache && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.m[old].data)
		delete(c.m, old)
	}
	c.m[k] = baseEntry{typ, data}
	c.order = append(c.order, k)
	c.bytes += len(data)
}

// parseTree decodes a tree object's content as go-git does (modes are
// made canonical), without copying it into an object first.
func parseTree(h plumbing.Hash, data []byte) (*object.Tree, error) {
	t := &object.Tree{Hash: h}
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 {
			return nil, fmt.Errorf("%w: malformed mode", object.ErrMalformedTree)
		}
		var mode uint64
		for _, c := range data[:sp] {
			if c < '0' || c > '7' {
				return nil, fmt.Errorf("%w: malformed mode", object.ErrMalformedTree)
			}
			if mode = mode<<3 | uint64(c-'0'); mode > 1<<32-1 {
				return nil, fmt.Errorf("%w: malformed mode", object.ErrMalformedTree)
			}
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 {
			return nil, fmt.Errorf("%w: missing filename terminator", object.ErrMalformedTree)
		}
		if nul == 0 {
			return nil, fmt.Errorf("%w: empty filename", object.ErrMalformedTree)
		}
		name := string(data[:nul])
		data = data[nul+1:]
		if len(data) < 20 {
			return nil, fmt.Errorf("%w: truncated object id", object.ErrMalformedTree)
		}
		e := object.TreeEntry{Name: name, Mode: canonicalMode(filemode.FileMode(mode))}
		copy(e.Hash[:], data[:20])
		data = data[20:]
		t.Entries = append(t.Entries, e)
	}
	return t, nil
}

// canonicalMode maps a tree entry's mode to one of git's, as go-git does.
func canonicalMode(m filemode.FileMode) filemode.FileMode {
	switch m & 0o170000 {
	case 0o040000:
		return filemode.Dir
	case 0o100000:
		if m&0o111 != 0 {
			return filemode.Executable
		}
		return filemode.Regular
	case 0o120000:
		return filemode.Symlink
	}
	return filemode.Submodule
}
