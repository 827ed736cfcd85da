//go:build unix

package catalog

import (
	"syscall"
	"time"
)

// cpuTime is the user and system CPU time this process has used: on a
// machine shared with other work, CPU time is steadier than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
