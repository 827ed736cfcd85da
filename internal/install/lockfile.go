package install

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
// exists is false. Folders recorded relative to the lock's folder come
// back absolute.
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
	if err != nil {
		return nil, true, err
	}
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, true, err
	}
	for i := range l.Skills {
		s := &l.Skills[i]
		for j, t := range s.Installed {
			if !filepath.IsAbs(t.Dir) {
				s.Installed[j].Dir = filepath.Join(base, filepath.FromSlash(t.Dir))
			}
		}
		if s.Resolved.Kind == "directory" && !filepath.IsAbs(s.Resolved.Dir) {
			s.Resolved.Dir = filepath.Join(base, filepath.FromSlash(s.Resolved.Dir))
		}
	}
	return l, true, nil
}

// relativeTo returns a copy of l for the file at path: every folder inside
// the lock file's own folder (an agent folder, a directory source of a
// project) written relative to it, slash-separated, so that the lock
// means the same folders wherever the project is checked out. Folders
// elsewhere (the user's home, for a user lock) stay absolute.
func relativeTo(l *Lock, path string) (*Lock, error) {
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	rel := func(dir string) string {
		if r, err := filepath.Rel(base, dir); err == nil && filepath.IsLocal(r) {
			return filepath.ToSlash(r)
		}
		return dir
	}
	out := *l
	out.Skills = slices.Clone(l.Skills)
	for i := range out.Skills {
		s := &out.Skills[i]
		s.Installed = slices.Clone(s.Installed)
		for j := range s.Installed {
			s.Installed[j].Dir = rel(s.Installed[j].Dir)
		}
		if s.Resolved.Kind == "directory" {
			s.Resolved.Dir = rel(s.Resolved.Dir)
		}
	}
	return &out, nil
}

// Write replaces the lock file at path atomically (a temporary file
// beside it, renamed), with the folders inside its own folder relative to
// it.
func Write(path string, l *Lock) error {
	l, err := relativeTo(l, path)
	if err != nil {
		return err
	}
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
