package install

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Acquire takes the install lock of the lock file at path: a flock on
// path+".lock" (on systems without flock, its exclusive creation). Two
// installs into the same scope run one after the other. Call the returned
// function to release it.
func Acquire(path string) (func() error, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	release, err := lockFile(path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return release, nil
}

// Read reads the lock file at path; a missing file is an empty lock and
// exists is false.
func Read(path string) (l *Lock, exists bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Lock{Version: LockVersion}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxLockSize+1))
	if err != nil {
		return nil, true, err
	}
	l, err = Parse(path, data)
	return l, true, err
}

// Write replaces the lock file at path atomically (a temporary file
// beside it, renamed).
func Write(path string, l *Lock) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(l.Marshal())
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
