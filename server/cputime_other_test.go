//go:build !unix

package server_test

import "time"

// cpuTime is 0 where getrusage is missing: the benchmark's CPU figures
// then read 0, and its req/s ratios still hold.
func cpuTime() time.Duration { return 0 }
