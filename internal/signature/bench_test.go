package signature

import (
	"runtime"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/cputime"
)

// BenchmarkVerify1000 compares verifying the signatures of 1,000 skills
// with verifying their files' digests alone (3 files of 4 KiB each per
// skill, the digest check a host does on every fetch), and reports the
// ratio. Issue #30 asks for at most 1.5x. The signatures are checked as
// a host checks a listing (VerifyAll, one goroutine per CPU); the serial
// ratio is reported beside it. This is the bare check in memory; what a
// user waits for (fetching and hashing every file, with and without a
// trust policy) is cmd/skillport's BenchmarkVerifySigned1000, and
// BenchmarkVerifyParts splits a verification into its costs.
func BenchmarkVerify1000(b *testing.B) {
	priv, pub := newKeys(b, false)
	s, _ := LoadSigner(priv, nil)
	sets, data := benchSkills(1000, 3, 4<<10)
	bundles := make([][]byte, len(sets))
	for i, set := range sets {
		var err error
		if bundles[i], err = s.Sign(set); err != nil {
			b.Fatal(err)
		}
	}
	var digests, sigs, serial, warm, digestsCPU, serialCPU time.Duration
	for b.Loop() {
		// Fresh verifiers: one that verified these bundles before answers
		// from its memory of them, measured apart (warm).
		b.StopTimer()
		v, _ := LoadVerifier(pub)
		serialV, _ := LoadVerifier(pub)
		b.StartTimer()
		c0 := cputime.Self()
		t0 := time.Now()
		for i, set := range sets {
			checkDigests(b, set, data[i])
		}
		t1 := time.Now()
		c1 := cputime.Self()
		for _, r := range v.VerifyAll(sets, bundles) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		t2 := time.Now()
		c2 := cputime.Self()
		for i, set := range sets {
			if _, err := serialV.Verify(set, bundles[i]); err != nil {
				b.Fatal(err)
			}
		}
		serialCPU += cputime.Self() - c2
		t3 := time.Now()
		for _, r := range v.VerifyAll(sets, bundles) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		warm += time.Since(t3)
		digests += t1.Sub(t0)
		digestsCPU += c1 - c0
		sigs += t2.Sub(t1)
		serial += t3.Sub(t2)
	}
	b.ReportMetric(float64(digests.Microseconds())/float64(b.N), "digests-µs/op")
	b.ReportMetric(float64(sigs.Microseconds())/float64(b.N), "signatures-µs/op")
	b.ReportMetric(float64(sigs)/float64(digests), "sig/digest-ratio")
	b.ReportMetric(float64(serial)/float64(digests), "serial-sig/digest-ratio")
	// CPU time is steadier than wall time on a shared machine: the serial
	// phases' ratio in CPU time is the cost per skill.
	b.ReportMetric(float64(serialCPU)/float64(digestsCPU), "cpu-sig/digest-ratio")
	b.ReportMetric(float64(warm)/float64(digests), "warm-sig/digest-ratio")
	b.Logf("1,000 skills: digests %v, signatures %v (VerifyAll, GOMAXPROCS %d), ratio %.2f; one goroutine %v, ratio %.2f; CPU time: digests %v, one goroutine %v, ratio %.2f; again (a re-listing) %v, ratio %.2f",
		digests/time.Duration(b.N), sigs/time.Duration(b.N), runtime.GOMAXPROCS(0), float64(sigs)/float64(digests),
		serial/time.Duration(b.N), float64(serial)/float64(digests),
		digestsCPU/time.Duration(b.N), serialCPU/time.Duration(b.N), float64(serialCPU)/float64(digestsCPU),
		warm/time.Duration(b.N), float64(warm)/float64(digests))
}
