//go:build unix

package peers

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a new process group, so that everything it
// spawns can be stopped with it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminateGroup sends SIGTERM to the process group cmd leads.
func terminateGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
}

// killGroup sends SIGKILL to the process group cmd leads (a no-op once the
// group is empty).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
