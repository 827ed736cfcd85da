//go:build unix

package install

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on path (created if need be), waiting
// for another holder; closing the file releases it, also when the process
// dies.
func lockFile(path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return f.Close, nil
}

// canFlock: a staging folder's owner holds its marker's lock, so a
// sweeper can ask whether it is alive.
const canFlock = true

// holdMarker locks a staging folder's marker for as long as f is open;
// a sweeper holding it means the folder is being removed (errSwept).
func holdMarker(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errSwept
	}
	return err
}

// tryMarker takes the marker's lock for a sweeper, reporting whether it
// got it (no living owner holds it); closing f releases it.
func tryMarker(f *os.File) bool {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}
