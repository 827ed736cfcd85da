package catalog

import "syscall"

// atSymlinkNofollow is AT_SYMLINK_NOFOLLOW, the same on every Linux
// architecture; package syscall does not export it.
const atSymlinkNofollow = 0x100

// lstatat is fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW).
func lstatat(dirfd int, name string, st *syscall.Stat_t) error {
	for {
		err := syscall.Fstatat(dirfd, name, st, atSymlinkNofollow)
		if err != syscall.EINTR {
			return err
		}
	}
}
