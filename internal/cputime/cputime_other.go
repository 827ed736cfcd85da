//go:build !unix && !windows

package cputime

import "time"

// Self is 0 where the process's CPU time cannot be read.
func Self() time.Duration { return 0 }

// Children is 0 where the children's CPU time cannot be read.
func Children() time.Duration { return 0 }
