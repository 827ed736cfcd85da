//go:build !unix

package catalog

import "time"

// cpuTime is 0 where getrusage is missing: CPU ratios are then not reported.
func cpuTime() time.Duration { return 0 }
