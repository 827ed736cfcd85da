package install

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strings"
)

// MaxTreeFiles bounds the entries [ReadTree] walks in one installed
// folder: a skill that grew past it is drift in itself.
const MaxTreeFiles = 100_000

// MaxTreeDepth bounds the folders [ReadTree] descends into, one open
// folder each: a skill URI has at most 64 segments, so no installed skill
// is deeper.
const MaxTreeDepth = 64

// ErrTooMany is returned by [ReadTree] for a folder of more than
// MaxTreeFiles entries, or nested deeper than MaxTreeDepth.
var ErrTooMany = errors.New("too many files")

// ReadTree records every regular file under dir (slash paths relative to
// dir) with its digest and size, sorted by path. Reads go through
// os.Root, so a link is never followed out of dir: a link, device or
// other non-regular entry is returned in odd, by path, for the caller to
// report as drift. Directories themselves are not recorded.
func ReadTree(dir string) (files []File, odd []string, err error) {
	return readTree(dir, MaxTreeFiles, MaxTreeDepth)
}

// readTree is ReadTree with its bounds given, so that tests reach them.
func readTree(dir string, maxFiles, maxDepth int) (files []File, odd []string, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	// One hash and one buffer for the whole folder (io.Copy from a file
	// would allocate 32 KiB for each), and each file opened relative to
	// its own folder's handle, one openat, as sha256sum opens it.
	w := &treeWalker{dir: dir, maxFiles: maxFiles, maxDepth: maxDepth, h: sha256.New(), buf: make([]byte, 32<<10)}
	if err := w.walk(root, "", 0); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(w.files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return w.files, w.odd, nil
}

type treeWalker struct {
	dir                string
	maxFiles, maxDepth int
	h                  hash.Hash
	buf                []byte
	n                  int
	files              []File
	odd                []string
}

// walk records the folder r, whose path under the tree is prefix ("" or
// ending in "/"), depth folders down.
func (w *treeWalker) walk(r *os.Root, prefix string, depth int) error {
	if depth > w.maxDepth {
		return fmt.Errorf("%s: %w (folders nested deeper than %d)", w.dir, ErrTooMany, w.maxDepth)
	}
	d, err := r.Open(".")
	if err != nil {
		return err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if w.n++; w.n > w.maxFiles {
			return fmt.Errorf("%s: %w (more than %d)", w.dir, ErrTooMany, w.maxFiles)
		}
		p := prefix + e.Name()
		switch {
		case e.IsDir():
			sub, err := r.OpenRoot(e.Name())
			if err != nil {
				return err
			}
			err = w.walk(sub, p+"/", depth+1)
			sub.Close()
			if err != nil {
				return err
			}
		case !e.Type().IsRegular():
			w.odd = append(w.odd, p)
		default:
			if err := w.hashFile(r, e.Name(), p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *treeWalker) hashFile(r *os.Root, name, p string) error {
	f, err := r.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	w.h.Reset()
	var size int64
	for {
		n, err := f.Read(w.buf)
		w.h.Write(w.buf[:n])
		size += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	w.files = append(w.files, File{Path: p, SHA256: hex.EncodeToString(w.h.Sum(w.buf[:0])), Size: size})
	return nil
}
