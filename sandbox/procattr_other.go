//go:build !linux

package sandbox

import "syscall"

// sysProcAttr exists so the package builds everywhere; bubblewrap is
// Linux-only, so New never returns a usable Runner elsewhere and Run is
// never reached.
func (r *Runner) sysProcAttr() *syscall.SysProcAttr { return nil }
