package cputime

import (
	"crypto/sha256"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// TestSelfGrowsWithWork fails if Self does not see the CPU this process
// spends (it would make every CPU-time ratio of the benchmarks 0 or NaN).
// It hashes until Self has grown by 50 ms, bounded by an amount of work
// (not a wall-clock window, which a process given a small share of a loaded
// machine would spend mostly waiting): 4 GiB of SHA-256 is seconds of CPU on
// any machine, so a Self that has not grown by then does not count.
func TestSelfGrowsWithWork(t *testing.T) {
	const want, maxWork = 50 * time.Millisecond, 4 << 30
	before := Self()
	buf := make([]byte, 1<<20)
	done := 0
	for ; done < maxWork && Self()-before < want; done += len(buf) {
		sha256.Sum256(buf)
	}
	if got := Self() - before; got < want {
		t.Fatalf("Self grew by %v over %d MiB of hashing; want at least %v", got, done>>20, want)
	}
}

// TestChildrenCountsWaitedChildren fails if a child's CPU, once waited
// for, is not in Children and Total.
func TestChildrenCountsWaitedChildren(t *testing.T) {
	if runtime.GOOS == "windows" { // no total of a process's children there: documented as 0
		if c := Children(); c != 0 {
			t.Fatalf("Children = %v on Windows, documented as 0", c)
		}
		return
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("sh is needed to run a busy child: %v", err)
	}
	before, total := Children(), Total()
	// The child spins for about 300 ms of CPU.
	cmd := exec.Command(sh, "-c", `end=$(( $(date +%s) + 1 )); i=0; while [ $(date +%s) -lt $end ] && [ $i -lt 200000 ]; do i=$((i+1)); done`)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("busy child: %v\n%s", err, out)
	}
	d := Children() - before
	if d <= 0 {
		t.Fatalf("Children grew by %v after a busy child was waited for", d)
	}
	if Total()-total < d {
		t.Fatalf("Total grew by %v, less than Children's %v", Total()-total, d)
	}
}
