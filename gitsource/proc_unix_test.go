//go:build unix

package gitsource_test

import (
	"os/exec"
	"syscall"
	"time"
)

// inOwnGroup starts cmd in a process group of its own, so that killGroup
// stops the processes it forks too (git daemon forks one per connection).
func inOwnGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills cmd's process group.
func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// cpuTime is the CPU time (user and system) of this process and of the
// children it has waited for, such as the git servers' request processes.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}

// childCPUTime is the part of cpuTime spent by children: the git servers.
func childCPUTime() time.Duration {
	var children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(children.Utime.Nano() + children.Stime.Nano())
}
