package sandbox

import "syscall"

// sysProcAttr starts bwrap in its own process group and, for a root caller,
// inside a user namespace whose only uid is r.uid with no supplementary
// groups (see the package documentation).
func (r *Runner) sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if r.asRoot {
		a.Cloneflags = syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: r.uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: r.gid, Size: 1}}
		// Allowed so the credential below can clear root's supplementary
		// groups, which would otherwise still grant group access on host files.
		a.GidMappingsEnableSetgroups = true
		a.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	}
	return a
}
