package main

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// TestHostGC checks that host commands, and only they, raise the GC
// percentage, and that an explicit GOGC wins.
func TestHostGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	if v, ok := os.LookupEnv("GOGC"); ok {
		os.Unsetenv("GOGC")
		t.Cleanup(func() { os.Setenv("GOGC", v) })
	}
	for _, tc := range []struct {
		cmd  string
		want int
	}{{"ls", hostGCPercent}, {"verify", hostGCPercent}, {"pull", hostGCPercent}, {"load", hostGCPercent}, {"gateway", hostGCPercent}, {"serve", 100}, {"validate", 100}} {
		cmd, _, err := rootCmd.Find([]string{tc.cmd})
		if err != nil || cmd.Name() != tc.cmd {
			t.Fatalf("no %s command: %v", tc.cmd, err)
		}
		debug.SetGCPercent(100)
		hostGC(cmd)
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("%s: GC percent %d, want %d", tc.cmd, got, tc.want)
		}
	}
	t.Setenv("GOGC", "100")
	cmd, _, _ := rootCmd.Find([]string{"ls"})
	hostGC(cmd)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("ls with GOGC=100 in the environment: GC percent %d, want 100", got)
	}
}

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
