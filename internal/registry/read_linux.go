//go:build linux

package registry

import "golang.org/x/sys/unix"

// beneath opens the files below one directory with a single openat2 call
// each, refusing any path that resolves outside it (as [os.Root] does):
// os.Root opens every directory on the way, and those calls made reading
// the largest part of storing new content.
type beneath struct{ fd int }

// openBeneath returns nil when the directory or openat2 is unavailable;
// the caller then reads through os.Root.
func openBeneath(dir string) *beneath {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return &beneath{fd: fd}
}

// read returns the content of name if it is a regular file of exactly size
// bytes; ok is false for anything else, including any error. The content
// is read into buf when it has room for size+1 bytes.
func (b *beneath) read(name string, size int64, buf []byte) (data []byte, ok bool) {
	fd, err := unix.Openat2(b.fd, name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != size {
		return nil, false
	}
	// Room for one byte more than expected: a file that grew since the
	// Fstat is told apart. Reading stops at size bytes (the Fstat saw the
	// end there), which spares a read that only finds the end of the file.
	data = sized(buf, size+1)
	n := 0
	for int64(n) < size {
		m, err := unix.Read(fd, data[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || m == 0 {
			return nil, false
		}
		n += m
	}
	if int64(n) != size {
		return nil, false
	}
	return data[:n], true
}

func (b *beneath) close() { unix.Close(b.fd) }
