package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gcSettings reads the collector settings without changing them.
func gcSettings() (percent, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// withoutGCEnv runs the test with GOGC and GOMEMLIMIT unset and the
// default collector settings, restoring what it found.
func withoutGCEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		if v, ok := os.LookupEnv(k); ok {
			os.Unsetenv(k)
			t.Cleanup(func() { os.Setenv(k, v) })
		}
	}
	percent := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

// churn allocates total bytes of garbage in 8 KiB blocks, and keeps
// every keep-th block alive (none when keep is 0) until it returns. It
// returns how many collections ran meanwhile and the peak of the heap's
// objects (live or not yet swept), sampled every MiB; after each MiB it
// calls check with the bytes kept so far.
func churn(total int64, keep int, check func(kept int64)) (cycles uint64, peak uint64) {
	const block = 8 << 10
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	start := s[0].Value.Uint64()
	var kept [][]byte
	var sink []byte
	for i := 0; int64(i)*block < total; i++ {
		sink = make([]byte, block)
		sink[0] = byte(i)
		if keep > 0 && i%keep == 0 {
			kept = append(kept, sink)
		}
		if i%128 == 0 {
			metrics.Read(s)
			peak = max(peak, s[1].Value.Uint64())
			if check != nil {
				check(int64(len(kept)) * block)
			}
		}
	}
	runtime.KeepAlive(kept)
	metrics.Read(s)
	return s[0].Value.Uint64() - start, peak
}

// TestBuildGCCollectsRarely: under the build policy, with a ceiling well
// above five times the live heap, allocating forty times the live heap of
// short-lived garbage costs at most half the collections the default
// setting costs (the heap grows to five times what is live instead of
// twice: about a quarter); the heap stays near the ceiling; and ending the
// policy restores the settings it found. The live heap is whatever the
// test process holds, plus 8 MiB.
func TestBuildGCCollectsRarely(t *testing.T) {
	withoutGCEnv(t)
	kept := make([][]byte, 8)
	for i := range kept {
		kept[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	live := int64(s[0].Value.Uint64())
	ceiling := max(16*live, 64<<20)
	def, _ := churn(40*live, 0, nil)

	runtime.GC()
	end := buildGC(ceiling, buildGCPercent)
	if p, l := gcSettings(); p != buildGCPercent || l != ceiling {
		t.Errorf("during the policy: GOGC %d and memory limit %d, want %d and %d", p, l, buildGCPercent, ceiling)
	}
	cycles, peak := churn(40*live, 0, nil)
	end()
	end() // a second call does nothing
	runtime.KeepAlive(kept)
	if cycles*2 > def {
		t.Errorf("%d collections for %d MiB of garbage with %d MiB live under the policy, %d with the default setting: want at most half",
			cycles, 40*live>>20, live>>20, def)
	}
	if peak > uint64(ceiling+ceiling/2) { // the limit is soft: a cycle runs while the program allocates
		t.Errorf("heap objects peaked at %d MiB, over the %d MiB ceiling", peak>>20, ceiling>>20)
	}
	if p, l := gcSettings(); p != 100 || l != math.MaxInt64 {
		t.Errorf("after the policy: GOGC %d and memory limit %d, want 100 and none", p, l)
	}
}

// TestBuildGCBacksOff: once more than half the ceiling is live, the policy
// gives the default settings back (a limit near the live heap would make
// the collector run without pause, and the heap would be held at the
// ceiling); before that, the heap stays near the ceiling.
func TestBuildGCBacksOff(t *testing.T) {
	withoutGCEnv(t)
	const ceiling = 32 << 20
	runtime.GC()
	end := buildGC(ceiling, buildGCPercent)
	defer end()
	var kept [][]byte
	for len(kept)*(1<<20) < 3*ceiling/4 {
		kept = append(kept, make([]byte, 1<<20))
	}
	restored := false
	var peak uint64
	for deadline := time.Now().Add(10 * time.Second); !restored && time.Now().Before(deadline); {
		_, p := churn(ceiling, 0, nil)
		peak = max(peak, p)
		percent, limit := gcSettings()
		restored = percent == 100 && limit == math.MaxInt64
	}
	runtime.KeepAlive(kept)
	if !restored {
		t.Fatalf("three quarters of the ceiling live for 10 s: the default settings did not come back")
	}
	// A limit is soft, and the test allocates far faster than a build.
	if peak > 2*ceiling {
		t.Errorf("before backing off, heap objects peaked at %d MiB, twice the %d MiB ceiling", peak>>20, ceiling>>20)
	}
}

// TestBuildGCEnvWins: with GOGC or GOMEMLIMIT in the environment the policy
// changes nothing.
func TestBuildGCEnvWins(t *testing.T) {
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(k, func(t *testing.T) {
			withoutGCEnv(t)
			t.Setenv(k, map[string]string{"GOGC": "100", "GOMEMLIMIT": "1GiB"}[k])
			end := buildGC(64<<20, buildGCPercent)
			p, l := gcSettings()
			end()
			if p != 100 || l != math.MaxInt64 {
				t.Errorf("with %s set: GOGC %d and memory limit %d during the policy, want 100 and none", k, p, l)
			}
		})
	}
}
