package registry_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serverCPU is the CPU time used so far by each process of the database
// server whose backend serves pid: the postmaster, its backends and its
// background workers share the postmaster's process group. A publish's
// cost includes the server's work, which runs on the same cores.
func serverCPU(backend uint32) map[int]time.Duration {
	_, pgrp, ok := procStat(strconv.Itoa(int(backend)))
	if !ok {
		return nil
	}
	out := map[int]time.Duration{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cpu, g, ok := procStat(filepath.Base(d))
		if ok && g == pgrp {
			pid, _ := strconv.Atoi(filepath.Base(d))
			out[pid] = cpu
		}
	}
	return out
}

// cpuSince is the CPU the server's processes used between two readings
// of serverCPU (a process that exited in between is not counted).
func cpuSince(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, c := range after {
		d += c - before[pid]
	}
	return d
}

// procStat reads a process's CPU time (user and system) and process group.
func procStat(pid string) (time.Duration, int, bool) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	// After the name: state(0) ppid(1) pgrp(2) ... utime(11) stime(12), in clock ticks.
	pgrp, _ := strconv.Atoi(f[2])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks, pgrp, true
}

// clockTicks is USER_HZ, which Linux fixes at 100 for /proc.
const clockTicks = 100
