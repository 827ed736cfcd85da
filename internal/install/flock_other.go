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

// canFlock is false here: a staging folder in use is told from an
// abandoned one by its age alone.
const canFlock = false

// holdMarker does nothing here.
func holdMarker(*os.File) error { return nil }

// tryMarker cannot ask the owner here; the caller goes by age.
func tryMarker(*os.File) bool { return true }
