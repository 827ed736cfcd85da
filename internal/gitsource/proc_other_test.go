//go:build !unix

package gitsource_test

import (
	"os/exec"
)

// inOwnGroup does nothing where there are no process groups.
func inOwnGroup(*exec.Cmd) {}

// killGroup kills cmd itself.
func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }
