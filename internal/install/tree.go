package install

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxTreeFiles bounds the entries [ReadTree] walks in one installed
// folder: a skill that grew past it is drift in itself.
const MaxTreeFiles = 100_000

// ErrTooMany is returned by [ReadTree] for a folder of more than
// MaxTreeFiles entries.
var ErrTooMany = errors.New("too many files")

// ReadTree records every regular file under dir (slash paths relative to
// dir) with its digest and size, sorted by path. Reads go through
// os.Root, so a link is never followed: a link, device or other
// non-regular entry is returned in odd, by path, for the caller to report
// as drift. Directories themselves are not recorded.
func ReadTree(dir string) (files []File, odd []string, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	n := 0
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > MaxTreeFiles {
			return fmt.Errorf("%s: %w (more than %d)", dir, ErrTooMany, MaxTreeFiles)
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			odd = append(odd, p)
			return nil
		}
		f, err := root.Open(filepath.FromSlash(p))
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		size, err := io.Copy(h, f)
		if err != nil {
			return err
		}
		files = append(files, File{Path: p, SHA256: hex.EncodeToString(h.Sum(nil)), Size: size})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return files, odd, nil
}
