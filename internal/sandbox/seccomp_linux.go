package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter every sandboxed process runs under (bwrap's --seccomp,
// applied after bwrap's own set-up, just before the script's interpreter is
// executed, and inherited by everything it starts). It is a denylist: what
// an ordinary script needs is allowed, and the calls below, which only serve
// to attack the kernel, other processes or the sandbox itself, fail with
// EPERM (the script sees "Operation not permitted"):
//
//   - observing or steering other processes: ptrace, process_vm_readv,
//     process_vm_writev, kcmp;
//   - file system and namespace changes: mount, umount2, pivot_root, chroot,
//     the new mount API (open_tree, move_mount, fsopen, fsconfig, fsmount,
//     fspick, mount_setattr), unshare, setns, and clone with any
//     namespace flag; clone3, whose flags a filter cannot read, fails with
//     ENOSYS so that C libraries fall back to clone;
//   - kernel attack surface rarely needed by scripts: keyctl, add_key,
//     request_key, bpf, perf_event_open, userfaultfd, io_uring_setup,
//     io_uring_enter, io_uring_register, open_by_handle_at,
//     name_to_handle_at;
//   - the machine's state: kexec_load, kexec_file_load, init_module,
//     finit_module, delete_module, reboot, swapon, swapoff, acct, quotactl,
//     quotactl_fd, syslog, vhangup, settimeofday, clock_settime,
//     clock_adjtime, adjtimex, sethostname, setdomainname;
//   - ioctl TIOCSTI and TIOCLINUX, which push input into a terminal;
//   - per architecture, the rest listed in archDenied (on amd64: the x32
//     ABI, iopl, ioperm, modify_ldt, uselib).
//
// A system call made with another architecture's convention (32-bit calls
// from a 64-bit process) kills the process: its numbers mean other calls.
var deniedSyscalls = []uint32{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KCMP,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT,
	unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR, unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_USERFAULTFD, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE,
	unix.SYS_DELETE_MODULE, unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
	unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_SYSLOG, unix.SYS_VHANGUP, unix.SYS_SETTIMEOFDAY,
	unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX, unix.SYS_SETHOSTNAME,
	unix.SYS_SETDOMAINNAME,
}

// Namespace flags a clone may not carry.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

const (
	retAllow       = unix.SECCOMP_RET_ALLOW
	retKillProcess = unix.SECCOMP_RET_KILL_PROCESS
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// Offsets into struct seccomp_data; arguments are 64-bit, and the flags and
// request numbers filtered here are their low halves (little-endian on both
// supported architectures).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
)

// seccompFilter assembles the filter into the raw form bwrap reads: an
// array of struct sock_filter in native byte order.
func seccompFilter() ([]byte, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("no seccomp filter is defined for this architecture; build for amd64 or arm64")
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: retKillProcess},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if abiBit != 0 {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: abiBit, SkipFalse: 1},
			bpf.RetConstant{Val: retErrno(unix.EPERM)})
	}
	for _, nr := range append(append([]uint32(nil), deniedSyscalls...), archDenied...) {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1},
			bpf.RetConstant{Val: retErrno(unix.EPERM)})
	}
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3, SkipFalse: 1},
		bpf.RetConstant{Val: retErrno(unix.ENOSYS)},

		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE, SkipFalse: 4},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNamespaces, SkipFalse: 1},
		bpf.RetConstant{Val: retErrno(unix.EPERM)},
		bpf.RetConstant{Val: retAllow},

		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_IOCTL, SkipFalse: 5},
		bpf.LoadAbsolute{Off: offArg1, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCSTI, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCLINUX, SkipTrue: 1},
		bpf.RetConstant{Val: retAllow},
		bpf.RetConstant{Val: retErrno(unix.EPERM)},

		bpf.RetConstant{Val: retAllow},
	)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.NativeEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}

// memFile holds data in an anonymous memory file positioned at its start,
// a descriptor bwrap can read to the end without us writing concurrently.
func memFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
