//go:build unix

package scan

import (
	"os/exec"
	"syscall"
)

// killGroup makes cancelling cmd kill its whole process group: a scanner
// that is a shell script leaves children (sleep, curl) that would
// otherwise outlive the timeout.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
