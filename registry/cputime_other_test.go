//go:build !linux

package registry_test

import "time"

// The CPU figures of the benchmarks are Linux-only (getrusage and /proc):
// elsewhere they are 0 and the CPU ratios are not reported.
func selfCPU() time.Duration { return 0 }

func serverCPU(uint32) map[int]time.Duration { return nil }

func cpuSince(_, _ map[int]time.Duration) time.Duration { return 0 }
