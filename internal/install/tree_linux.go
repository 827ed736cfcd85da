package install

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// read walks the tree by descriptors: each name that getdents lists is
// opened relative to its folder's descriptor with O_NOFOLLOW, so a link
// is never followed (the open fails with ELOOP and the link is reported),
// and fstat on the descriptor says what it is. A file costs an openat, an
// fstat, its reads and a close, about what sha256sum spends; os.Root
// spends twice the system calls (fcntl, poller registration, fstatat).
func (w *treeWalker) read() error {
	fd, err := openat(unix.AT_FDCWD, w.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open %s: %w", w.dir, err)
	}
	defer unix.Close(fd)
	return w.walkFD(fd, "", 0, make([]byte, 16<<10))
}

// walkFD records the open folder dirfd, whose path under the tree is
// prefix ("" or ending in "/"), depth folders down. dents is its buffer
// for getdents, not used after the names are parsed.
func (w *treeWalker) walkFD(dirfd int, prefix string, depth int, dents []byte) error {
	if err := w.deep(depth); err != nil {
		return err
	}
	var names []string
	for {
		n, err := unix.ReadDirent(dirfd, dents)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s%s: %w", w.dir+"/", prefix, err)
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(dents[:n], -1, names)
	}
	for _, name := range names {
		if err := w.count(); err != nil {
			return err
		}
		p := prefix + name
		// O_NONBLOCK: a FIFO put here would block a blocking open; fstat
		// then reports it. Reads of regular files ignore the flag.
		fd, err := openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK)
		if errors.Is(err, unix.ELOOP) {
			w.odd = append(w.odd, p) // a link
			continue
		}
		if err != nil {
			return fmt.Errorf("open %s/%s: %w", w.dir, p, err)
		}
		err = w.entryFD(fd, p, depth, dents)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *treeWalker) entryFD(fd int, p string, depth int, dents []byte) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s/%s: %w", w.dir, p, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return w.walkFD(fd, p+"/", depth+1, dents)
	case unix.S_IFREG:
	default:
		w.odd = append(w.odd, p)
		return nil
	}
	w.h.Reset()
	var size int64
	for {
		n, err := unix.Read(fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s/%s: %w", w.dir, p, err)
		}
		if n == 0 {
			break
		}
		w.h.Write(w.buf[:n])
		size += int64(n)
	}
	w.hashed(p, size)
	return nil
}

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
