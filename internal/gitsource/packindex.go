package gitsource

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// errThinPack says a pack has deltas against objects it does not hold;
// go-git's parser, which looks them up in the mirror, indexes it.
var errThinPack = errors.New("pack with deltas against objects outside it")

// maxPackDeltaDepth bounds the delta chains of a pack indexed, as go-git's
// parser does.
const maxPackDeltaDepth = 4095

// packEntry is one object of a pack being indexed.
type packEntry struct {
	off, end int64
	typ      plumbing.ObjectType // resolved type once data is the content
	delta    []byte              // a delta's instructions until resolved
	base     int64               // an offset delta's base
	ref      plumbing.Hash       // a reference delta's base
	isRef    bool
	data     []byte
	hash     plumbing.Hash
	crc      uint32
	done     bool
	hashed   bool
}

// indexPack parses a whole pack held in memory in one pass: each object
// is inflated once, its id computed (with go-git's SHA-1, which detects
// collision attacks), deltas resolved against bases in the pack, and the
// objects kept for the build that follows. go-git's parser inflates each
// object twice through a byte-at-a-time scanner and copies it into a
// memory object, which made indexing a fetched pack cost half as much as
// building its catalog. The objects together may not exceed
// maxPackMemory (errPackMemory); a thin pack is errThinPack.
func indexPack(data []byte) (map[plumbing.Hash]plumbing.EncodedObject, *idxfile.MemoryIndex, plumbing.Hash, error) {
	var sum plumbing.Hash
	if len(data) < 32 || string(data[:4]) != "PACK" {
		return nil, nil, sum, fmt.Errorf("%w: no pack header", packfile.ErrMalformedPackFile)
	}
	if v := binary.BigEndian.Uint32(data[4:]); v != 2 && v != 3 {
		return nil, nil, sum, fmt.Errorf("%w: version %d", packfile.ErrMalformedPackFile, v)
	}
	count := binary.BigEndian.Uint32(data[8:])
	body := data[:len(data)-20]
	if got := sha1.Sum(body); !bytes.Equal(got[:], data[len(data)-20:]) {
		return nil, nil, sum, fmt.Errorf("%w: pack checksum mismatch", packfile.ErrMalformedPackFile)
	}
	copy(sum[:], data[len(data)-20:])
	if err := checkCount(count, int64(len(data))); err != nil {
		return nil, nil, sum, err
	}
	// A declared count reserves no more than maxPackPrealloc entries: the
	// rest grow with the objects actually read, each charged to the
	// memory bound.
	hint := int(min(count, maxPackPrealloc))
	entries := make([]packEntry, 0, hint)
	byOff := make(map[int64]int, hint)
	left := maxPackMemory
	var zr io.ReadCloser
	br := bytes.NewReader(nil)
	refs := false
	off := int64(12)
	for i := range int(count) {
		hd, err := parseEntryHeader(body, off)
		if err != nil {
			return nil, nil, sum, err
		}
		if err := checkSize(i, off, hd.typ, hd.size); err != nil {
			return nil, nil, sum, err
		}
		if left -= hd.size + packEntryCost; left < 0 {
			return nil, nil, sum, errPackMemory
		}
		entries = append(entries, packEntry{off: off})
		e := &entries[i]
		br.Reset(body[hd.data:])
		if zr == nil {
			zr, err = zlib.NewReader(br)
		} else {
			err = zr.(zlib.Resetter).Reset(br, nil)
		}
		if err != nil {
			return nil, nil, sum, fmt.Errorf("%w: object at %d: %v", packfile.ErrMalformedPackFile, off, err)
		}
		// Inflation stops at the declared size, plus one byte to tell a
		// longer stream.
		buf := make([]byte, hd.size)
		if _, err := io.ReadFull(zr, buf); err != nil {
			return nil, nil, sum, fmt.Errorf("%w: object at %d: %v", packfile.ErrMalformedPackFile, off, err)
		}
		var more [1]byte
		if _, err := io.ReadFull(zr, more[:]); err != io.EOF {
			return nil, nil, sum, fmt.Errorf("%w: object %d of the pack (at byte %d) is longer than its header says, or damaged", errPackLimit, i, off)
		}
		e.end = int64(len(body)) - int64(br.Len())
		off = e.end
		byOff[e.off] = i
		switch hd.typ {
		case plumbing.OFSDeltaObject:
			e.delta, e.base = buf, hd.base
		case plumbing.REFDeltaObject:
			e.delta, e.ref, e.isRef, refs = buf, hd.ref, true, true
		default:
			e.typ, e.data, e.done = hd.typ, buf, true
		}
	}
	if off != int64(len(body)) {
		return nil, nil, sum, fmt.Errorf("%w: %d bytes after the last object", packfile.ErrMalformedPackFile, int64(len(body))-off)
	}
	// Inflating is sequential (an entry ends where its stream does);
	// hashing is not.
	hashEntries(body, entries)
	var byHash map[plumbing.Hash]int
	if refs {
		// Reference deltas name their bases by id: resolved ones are
		// hashed as they are resolved, for the next to find.
		byHash = make(map[plumbing.Hash]int, hint)
		for i := range entries {
			if entries[i].done {
				byHash[entries[i].hash] = i
			}
		}
	}
	// Resolve deltas, passing over them again while reference deltas
	// find bases that an earlier pass resolved.
	for pending := true; pending; {
		pending = false
		progress := false
		for i := range entries {
			if entries[i].done {
				continue
			}
			ok, err := resolveEntry(body, entries, byOff, byHash, i, 0, &left)
			if err != nil {
				return nil, nil, sum, err
			}
			if ok {
				progress = true
			} else {
				pending = true
			}
		}
		if pending && !progress {
			return nil, nil, sum, errThinPack
		}
	}
	hashEntries(body, entries)
	iw := new(idxfile.Writer)
	iw.OnHeader(count)
	objs := make(map[plumbing.Hash]plumbing.EncodedObject, len(entries))
	for i := range entries {
		e := &entries[i]
		iw.Add(e.hash, uint64(e.off), e.crc)
		objs[e.hash] = &packObject{h: e.hash, t: e.typ, data: e.data}
	}
	if err := iw.OnFooter(sum); err != nil {
		return nil, nil, sum, err
	}
	idx, err := iw.Index()
	return objs, idx, sum, err
}

// resolveEntry applies entry i's delta to its base, resolving the base
// first; false means a reference delta's base is not known yet.
// Without reference deltas (byHash nil), ids are left to hashEntries.
func resolveEntry(body []byte, entries []packEntry, byOff map[int64]int, byHash map[plumbing.Hash]int, i, depth int, left *int64) (bool, error) {
	e := &entries[i]
	if e.done {
		return true, nil
	}
	if depth > maxPackDeltaDepth {
		return false, fmt.Errorf("%w: delta chain depth exceeds %d", packfile.ErrMalformedPackFile, maxPackDeltaDepth)
	}
	var b int
	var ok bool
	if e.isRef {
		b, ok = byHash[e.ref]
	} else {
		b, ok = byOff[e.base]
		if !ok {
			return false, fmt.Errorf("%w: delta at %d has no base at %d", packfile.ErrMalformedPackFile, e.off, e.base)
		}
	}
	if !ok {
		return false, nil
	}
	if ok, err := resolveEntry(body, entries, byOff, byHash, b, depth+1, left); !ok || err != nil {
		return ok, err
	}
	base := &entries[b]
	// The result's size leads the delta, after the base's: bound it
	// before building it.
	r := bytes.NewReader(e.delta)
	if _, err := binary.ReadUvarint(r); err != nil {
		return false, fmt.Errorf("%w: delta at %d: %v", packfile.ErrMalformedPackFile, e.off, err)
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return false, fmt.Errorf("%w: delta at %d: %v", packfile.ErrMalformedPackFile, e.off, err)
	}
	if err := checkSize(i, e.off, base.typ, int64(min(n, 1<<62))); err != nil {
		return false, fmt.Errorf("%w (built by a delta)", err)
	}
	if *left -= int64(n); *left < 0 {
		return false, errPackMemory
	}
	data, err := packfile.PatchDelta(base.data, e.delta)
	if err != nil {
		return false, fmt.Errorf("%w: delta at %d: %v", packfile.ErrMalformedPackFile, e.off, err)
	}
	e.typ, e.data, e.delta, e.done = base.typ, data, nil, true
	if byHash != nil {
		e.hash, e.hashed = plumbing.ComputeHash(e.typ, data), true
		e.crc = crc32.ChecksumIEEE(body[e.off:e.end])
		byHash[e.hash] = i
	}
	return true, nil
}

// hashEntries computes the ids and CRC-32s of the resolved entries not
// hashed yet, on every CPU.
func hashEntries(body []byte, entries []packEntry) {
	n := min(runtime.GOMAXPROCS(0), len(entries)/256+1)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(entries); i += n {
				if e := &entries[i]; e.done && !e.hashed {
					e.hash, e.hashed = plumbing.ComputeHash(e.typ, e.data), true
					e.crc = crc32.ChecksumIEEE(body[e.off:e.end])
				}
			}
		}()
	}
	wg.Wait()
}

// parseEntryHeader parses the header of the pack entry at off.
func parseEntryHeader(body []byte, off int64) (objHeader, error) {
	var hd objHeader
	if off >= int64(len(body)) {
		return hd, fmt.Errorf("%w: truncated", packfile.ErrMalformedPackFile)
	}
	end := min(int64(len(body)), off+64)
	p := &packIndex{f: readerAtCloser{bytes.NewReader(body[:end])}, size: end}
	hd, err := p.header(off)
	if err != nil {
		return hd, fmt.Errorf("%w: bad object header at %d", packfile.ErrMalformedPackFile, off)
	}
	if hd.size < 0 {
		return hd, fmt.Errorf("%w: bad object size at %d", packfile.ErrMalformedPackFile, off)
	}
	return hd, nil
}

// packObject is an object of a pack just indexed, read-only.
type packObject struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	data []byte
}

func (o *packObject) Hash() plumbing.Hash         { return o.h }
func (o *packObject) Type() plumbing.ObjectType   { return o.t }
func (o *packObject) SetType(plumbing.ObjectType) {}
func (o *packObject) Size() int64                 { return int64(len(o.data)) }
func (o *packObject) SetSize(int64)               {}
func (o *packObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.data)), nil
}
func (o *packObject) Writer() (io.WriteCloser, error) {
	return nil, errors.New("a fetched object cannot be written")
}

// readerAtCloser is a pack in memory.
type readerAtCloser struct{ *bytes.Reader }

func (readerAtCloser) Close() error { return nil }
