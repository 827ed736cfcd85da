package gitsource

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"

	"github.com/skillport/skillport/skill"
)

// A fetched pack comes from a remote that may be hostile: what it declares
// (object sizes, object counts) is checked against these bounds before
// anything is allocated, inflated or written from it. docs/git.md says
// what they cost.
const (
	// maxObjectSize is the largest object a pack may hold, or a delta
	// build: a skill's files may total no more (skill.MaxBytes), so a
	// larger blob could never be served, and no tree or commit of a
	// skills repository comes near it.
	maxObjectSize = skill.MaxBytes
	// minPackEntry is the fewest bytes a pack entry takes: a one-byte
	// header and the shortest zlib stream (2 bytes of header, a 2-byte
	// empty block, a 4-byte checksum). A count that the pack's length
	// cannot hold is a lie.
	minPackEntry = 9
	// maxPackPrealloc bounds what is reserved up front from a declared
	// object count; past it, slices and maps grow with the objects
	// actually read.
	maxPackPrealloc = 1 << 12
	// packEntryCost is what indexing one entry costs besides its data
	// (entry, offset map, object, index entry), charged to the memory
	// bound so that many tiny objects are bounded as large ones are.
	packEntryCost = 320
)

// maxPackObjects bounds the objects of one fetched pack (a first fetch
// holds the branch's whole history; later ones only what is new): go-git's
// parser, which indexes packs too large for memory, keeps about 500 bytes
// for each, and indexPack about packEntryCost.
var maxPackObjects uint32 = 1 << 18

// DefaultMaxFetch is the most bytes one fetch may write to the cache
// directory when [Options].MaxFetch is zero: far more than a skills
// repository's history, far less than a disk.
const DefaultMaxFetch = 1 << 30

// errFetchTooLarge is returned by a pack writer past its cap.
var errFetchTooLarge = errors.New("fetch too large")

// errPackLimit marks a pack refused for declaring more than the bounds
// allow; such a pack is never handed to go-git.
var errPackLimit = errors.New("pack over the limits")

// checkCount refuses a declared object count that the pack's length
// cannot hold or that passes maxPackObjects.
func checkCount(count uint32, packLen int64) error {
	if int64(count) > (packLen-32)/minPackEntry+1 {
		return fmt.Errorf("%w: the pack declares %d objects in %d bytes, more than it can hold", errPackLimit, count, packLen)
	}
	if count > maxPackObjects {
		return fmt.Errorf("%w: the pack declares %d objects, over the %d skillport fetches at once", errPackLimit, count, maxPackObjects)
	}
	return nil
}

// checkSize refuses an object (i-th, at off) whose declared size passes
// maxObjectSize.
func checkSize(i int, off int64, typ plumbing.ObjectType, size int64) error {
	if size > maxObjectSize || size < 0 {
		return fmt.Errorf("%w: object %d of the pack (at byte %d) is a %s of %d bytes, over the %d MiB a skill's files may total; remove it from the history of the branch served, or serve a repository without it",
			errPackLimit, i, off, typ, size, maxObjectSize>>20)
	}
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// checkPack walks a pack file's entries before go-git's parser is given
// it, with constant memory: the count, every declared size and every
// delta's result size within the bounds, and every zlib stream inflating
// to exactly its declared size (inflation stops one byte past it). go-git
// trusts them: it reserves up to 1 GiB from a declared size and inflates
// a stream whole.
func checkPack(f io.ReaderAt, size int64) error {
	var head [12]byte
	if _, err := f.ReadAt(head[:], 0); err != nil || string(head[:4]) != "PACK" || size < 32 {
		return fmt.Errorf("%w: no pack header", packfile.ErrMalformedPackFile)
	}
	count := binary.BigEndian.Uint32(head[8:])
	if err := checkCount(count, size); err != nil {
		return err
	}
	p := &packIndex{f: nopCloser{f}, size: size - 20}
	br := bufio.NewReaderSize(nil, 32<<10)
	var zr io.ReadCloser
	off := int64(12)
	for i := range int(count) {
		hd, err := p.header(off)
		if err != nil {
			return fmt.Errorf("%w: bad object header at byte %d", packfile.ErrMalformedPackFile, off)
		}
		if err := checkSize(i, off, hd.typ, hd.size); err != nil {
			return err
		}
		cr := &countingReader{r: io.NewSectionReader(f, hd.data, p.size-hd.data)}
		br.Reset(cr)
		if zr == nil {
			zr, err = zlib.NewReader(br)
		} else {
			err = zr.(zlib.Resetter).Reset(br, nil)
		}
		if err != nil {
			return fmt.Errorf("%w: object at byte %d: %v", packfile.ErrMalformedPackFile, off, err)
		}
		// Inflation stops one byte past the declared size.
		lr := &countingReader{r: io.LimitReader(zr, hd.size+1)}
		if hd.typ.IsDelta() {
			b := &byteReader{r: lr}
			if _, err := binary.ReadUvarint(b); err != nil {
				return fmt.Errorf("%w: delta at byte %d: %v", packfile.ErrMalformedPackFile, off, err)
			}
			n, err := binary.ReadUvarint(b)
			if err != nil {
				return fmt.Errorf("%w: delta at byte %d: %v", packfile.ErrMalformedPackFile, off, err)
			}
			if err := checkSize(i, off, plumbing.BlobObject, int64(min(n, 1<<62))); err != nil {
				return fmt.Errorf("%w (built by a delta)", err)
			}
		}
		if _, err := io.Copy(io.Discard, lr); err != nil {
			return fmt.Errorf("%w: object at byte %d: %v", packfile.ErrMalformedPackFile, off, err)
		}
		if lr.n != hd.size {
			return fmt.Errorf("%w: object %d of the pack (at byte %d) is longer or shorter than its header says", errPackLimit, i, off)
		}
		off = hd.data + cr.n - int64(br.Buffered())
	}
	if off != size-20 {
		return fmt.Errorf("%w: %d bytes after the last object", packfile.ErrMalformedPackFile, size-20-off)
	}
	return nil
}

type nopCloser struct{ io.ReaderAt }

func (nopCloser) Close() error { return nil }
