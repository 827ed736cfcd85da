//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Self is the user and system CPU time this process has used.
func Self() time.Duration { return usage(syscall.RUSAGE_SELF) }

// Children is the user and system CPU time of the child processes this
// process has waited for.
func Children() time.Duration { return usage(syscall.RUSAGE_CHILDREN) }

func usage(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
