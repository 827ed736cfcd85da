package install

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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
// dir) with its digest and size, sorted by path. A link inside dir is
// never followed (on Linux each name is opened with O_NOFOLLOW relative
// to its folder's descriptor, elsewhere through os.Root): a link, device
// or other non-regular entry is returned in odd, sorted, for the caller
// to report as drift. Directories themselves are not recorded.
func ReadTree(dir string) (files []File, odd []string, err error) {
	return readTree(dir, MaxTreeFiles, MaxTreeDepth)
}

// readTree is ReadTree with its bounds given, so that tests reach them.
func readTree(dir string, maxFiles, maxDepth int) (files []File, odd []string, err error) {
	// One hash and one buffer for the whole folder (io.Copy from a file
	// would allocate 32 KiB for each), and each file opened relative to
	// its own folder's handle by its one name, as sha256sum opens it.
	w := &treeWalker{dir: dir, maxFiles: maxFiles, maxDepth: maxDepth, h: sha256.New(), buf: make([]byte, 32<<10)}
	if err := w.read(); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(w.files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(w.odd)
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

// count counts one more entry, and refuses one past the bound.
func (w *treeWalker) count() error {
	if w.n++; w.n > w.maxFiles {
		return fmt.Errorf("%s: %w (more than %d)", w.dir, ErrTooMany, w.maxFiles)
	}
	return nil
}

// deep refuses a folder deeper than the bound.
func (w *treeWalker) deep(depth int) error {
	if depth > w.maxDepth {
		return fmt.Errorf("%s: %w (folders nested deeper than %d)", w.dir, ErrTooMany, w.maxDepth)
	}
	return nil
}

// hashed records the file p whose content was hashed into w.h.
func (w *treeWalker) hashed(p string, size int64) {
	w.files = append(w.files, File{Path: p, SHA256: hex.EncodeToString(w.h.Sum(w.buf[:0])), Size: size})
}
