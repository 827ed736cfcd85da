//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// amd64: the x32 ABI (system call numbers with bit 30 set) shares the
// architecture tag and is refused, and so are the calls that reach I/O
// ports, the local descriptor table and a.out loading.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	abiBit    = 0x40000000
)

var archDenied = []uint32{unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_MODIFY_LDT, unix.SYS_USELIB}
