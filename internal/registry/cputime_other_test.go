//go:build !linux

package registry_test

import "time"

// The database server's CPU figures are Linux-only (/proc): elsewhere
// they are 0 and the ratios that include them are not reported.

func serverCPU(uint32) map[int]time.Duration { return nil }

func cpuSince(_, _ map[int]time.Duration) time.Duration { return 0 }
