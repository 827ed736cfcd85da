//go:build unix

package install

import (
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

// holdMarker locks a staging folder's marker for as long as f is open.
func holdMarker(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// tryMarker reports whether a living process holds the marker's lock;
// the lock taken for the look is released when f is closed. canLock is
// always true here.
func tryMarker(f *os.File) (held, canLock bool) {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil, true
}
