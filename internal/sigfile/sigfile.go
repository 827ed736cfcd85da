// Package sigfile says where a source tree keeps its skills' signature
// bundles, and reads them; it has no dependencies so that the catalog can
// read bundles without linking the Sigstore libraries.
package sigfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// Dir is the folder, relative to the source root, that holds the
// bundles. It starts with a dot, and the catalog never publishes
// dot-folders, so a bundle is never served as a skill file.
const Dir = ".skillport/signatures"

// MaxBytes bounds a bundle: a key-based one is about 2 KiB, one with a
// certificate chain and log entries under 16 KiB.
const MaxBytes = 64 << 10

// Path returns the slash-separated path, relative to the source root, of
// the bundle of the skill in directory dir ("." for a skill at the root).
func Path(dir string) string {
	if dir == "" || dir == "." {
		dir = "_root"
	}
	return Dir + "/" + dir + ".sigstore.json"
}

// Read returns the bundle of the skill in directory dir, or nil when
// there is none. A bundle over MaxBytes is an error.
func Read(fsys fs.FS, dir string) ([]byte, error) {
	f, err := fsys.Open(Path(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%s is over the %d-byte limit of a signature bundle", Path(dir), MaxBytes)
	}
	return b, nil
}
