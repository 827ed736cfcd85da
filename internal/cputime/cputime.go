// Package cputime reads the CPU time of the running process, for
// benchmarks that report CPU-time ratios beside wall-time ones: on a
// machine shared with other work, CPU time is steadier than wall time.
package cputime

import "time"

// Total is the user and system CPU time this process and its waited-for
// children have used (on Windows, this process alone; elsewhere without
// getrusage, 0). A benchmark that runs a subprocess counts its cost here
// once the subprocess has been waited for.
func Total() time.Duration { return Self() + Children() }
