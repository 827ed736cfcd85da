package install

import (
	"errors"

	"golang.org/x/sys/unix"
)

var errNoExchange = errors.New("no atomic exchange")

// exchange swaps two folders atomically (renamex_np RENAME_SWAP, APFS and
// HFS+); a filesystem without it answers ENOTSUP or EINVAL, and the caller
// falls back.
func exchange(a, b string) error {
	err := unix.RenamexNp(a, b, unix.RENAME_SWAP)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return errNoExchange
	}
	return err
}
