//go:build !unix

package peers

import (
	"os"
	"os/exec"
)

// ownGroup is a no-op where process groups are unavailable.
func ownGroup(*exec.Cmd) {}

// terminateGroup interrupts the process itself.
func terminateGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Signal(os.Interrupt)
	}
}

// killGroup kills the process itself.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
