package e2e_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU this process has used; Windows does not account the
// CPU of exited children to their parent, so subprocess servers are missed
// and cpu-busy reads low there.
func cpuTime() time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil || syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	// Filetime counts 100 ns ticks.
	ticks := func(f syscall.Filetime) time.Duration {
		return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
	}
	return ticks(kernel) + ticks(user)
}

// selfCPU is the CPU this process alone has used: on Windows that is what
// cpuTime measures already.
func selfCPU() time.Duration { return cpuTime() }
