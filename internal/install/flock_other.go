//go:build !unix

package install

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// lockFile creates path exclusively, waiting up to a minute while
// another install holds it; removing it releases it. A process that died
// holding it leaves the file, and the error says to delete it.
func lockFile(path string) (func() error, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return func() error { return os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s is held by another install; if none is running, delete it", path)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// holdMarker does nothing here: without flock, a staging folder in use
// is told from an abandoned one by its age alone.
func holdMarker(*os.File) error { return nil }

// tryMarker cannot ask the owner here (canLock false): the caller goes by
// the marker's age.
func tryMarker(*os.File) (held, canLock bool) { return false, false }
