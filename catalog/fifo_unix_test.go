//go:build unix

package catalog

import "syscall"

// mkfifo makes a named pipe, the special file a catalog must never open.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
