//go:build unix

package gitsource_test

import (
	"os/exec"
	"syscall"
)

// inOwnGroup starts cmd in a process group of its own, so that killGroup
// stops the processes it forks too (git daemon forks one per connection).
func inOwnGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills cmd's process group.
func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
