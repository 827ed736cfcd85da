//go:build !linux

package catalog

import (
	"errors"
)

// fdWalkSupported reports whether this platform has the descriptor walk
// (walk_fd.go); elsewhere directories are read through os.Root paths.
const fdWalkSupported = false

// fdDir stands in for walk_fd.go's open directory; it is never created here.
type fdDir struct{}

func (d *fdDir) release() {}

func (d *fdDir) close() {}

func (b *builder) openFDRoot() error { return errors.ErrUnsupported }

func (b *builder) visitFD(*dirTask, *fileReader) []*dirTask {
	panic("catalog: no descriptor walk on this platform")
}

func (b *builder) reloadUnchanged(*Catalog) *Catalog { return nil }
