package e2e_test

import "os/exec"

func runGo(args ...string) ([]byte, error) { return exec.Command("go", args...).CombinedOutput() }
