package main

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// TestServeMemoryLimit: serve sets a soft memory limit of a few times its
// live heap (at least the floor), and leaves an explicit GOMEMLIMIT alone.
func TestServeMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Cleanup(func() { os.Setenv("GOMEMLIMIT", v) })
	}
	os.Unsetenv("GOMEMLIMIT")
	debug.SetMemoryLimit(math.MaxInt64)
	serveMemoryLimit()
	got := debug.SetMemoryLimit(-1)
	if got == math.MaxInt64 || got < serveMemoryFloor {
		t.Errorf("without GOMEMLIMIT: limit %d, want at least %d and set", got, serveMemoryFloor)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(12345 << 20)
	serveMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != 12345<<20 {
		t.Errorf("with GOMEMLIMIT set: limit changed to %d", got)
	}
}
