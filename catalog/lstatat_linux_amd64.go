package catalog

import (
	"syscall"
	"unsafe"
)

// atSymlinkNofollow is AT_SYMLINK_NOFOLLOW, the same on every Linux
// architecture; package syscall does not export it.
const atSymlinkNofollow = 0x100

// lstatat is fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW), which package
// syscall does not export on amd64.
func lstatat(dirfd int, name string, st *syscall.Stat_t) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
			uintptr(unsafe.Pointer(st)), atSymlinkNofollow, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		}
		return errno
	}
}
