//go:build !unix

package gitsource_test

import (
	"os/exec"
	"time"
)

// inOwnGroup does nothing where there are no process groups.
func inOwnGroup(*exec.Cmd) {}

// killGroup kills cmd itself.
func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }

// cpuTime is not measured here: the CPU-time figures read zero.
func cpuTime() time.Duration { return 0 }

func childCPUTime() time.Duration { return 0 }
