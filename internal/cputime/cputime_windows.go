package cputime

import (
	"syscall"
	"time"
)

// Self is the user and system CPU time this process has used.
func Self() time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil || syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	// A Filetime counts 100 ns ticks.
	ticks := func(f syscall.Filetime) time.Duration {
		return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
	}
	return ticks(kernel) + ticks(user)
}

// Children is 0: Windows keeps no total for a process's children.
func Children() time.Duration { return 0 }
