package install

import (
	"errors"

	"golang.org/x/sys/unix"
)

var errNoExchange = errors.New("no atomic exchange")

// exchange swaps two folders atomically (renameat2 RENAME_EXCHANGE); a
// filesystem without it answers EINVAL, and the caller falls back.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return errNoExchange
	}
	return err
}
