package main

import (
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
