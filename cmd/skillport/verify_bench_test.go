//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/cputime"
	"github.com/skillport/skillport/internal/skilltest"
)

// signedBenchTree writes n skills of a SKILL.md and three 4 KiB files
// (the 12 KiB skill of internal/signature's BenchmarkVerify1000), twice:
// unsigned, and signed with a new P-256 key by skillport sign. It returns
// both trees and the public key file.
func signedBenchTree(b *testing.B, n int) (unsigned, signed, pub string) {
	files := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("skill-%04d", i)
		files[name+"/SKILL.md"] = skillMD(name)
		for j := range 3 {
			files[fmt.Sprintf("%s/ref/f%d.md", name, j)] = strings.Repeat(fmt.Sprintf("%s %d\n", name, j), 4096/12)
		}
	}
	unsigned, signed = skilltest.WriteTree(b, files), skilltest.WriteTree(b, files)
	priv, pub := keyFiles(b, b.TempDir(), "acme")
	b.Setenv("SKILLPORT_KEY_PASSWORD", "pw")
	if err := runSign(&bytes.Buffer{}, priv, signed); err != nil {
		b.Fatal(err)
	}
	return unsigned, signed, pub
}

// BenchmarkVerifySigned1000 measures what a user waits for when a host
// checks 1,000 signed skills: skillport verify URL against a real
// skillport serve --http on loopback lists every skill, reads every
// file, and checks its size and sha256 (host.FetchAll), in this process.
// Three runs alternate in each iteration:
//   - digests: verify of the same skills served unsigned (what a host
//     does with no signatures at all: the issue's "verifying their digests
//     alone");
//   - signed, no policy: verify of the signed server, which checks each
//     signature's binding to its skill and names the signer, unchecked;
//   - trusted-key: verify --trusted-key of the signed server, every
//     signature verified (cold: each run is a new host and Verifier).
//
// Metrics, each measured in the same run: x-digests (trusted-key wall ÷
// digests wall, the issue's ≤ 1.5×), x-digests-cpu (the same in this
// process's CPU time; the servers are other processes), the no-policy
// run's ratios to digests, and x-nopolicy (trusted-key ÷ no policy, the
// same signed server with and without a trust policy). With -cpuprofile, the samples carry the run's name:
// go tool pprof -tagfocus=run=trusted-key (or digests, nopolicy).
func BenchmarkVerifySigned1000(b *testing.B) {
	const n = 1000
	bin := skilltest.Binary(b)
	fakeHome(b)
	unsigned, signed, pub := signedBenchTree(b, n)
	plainAddr, signedAddr := freeAddr(b), freeAddr(b)
	startServeProcess(b, bin, plainAddr, unsigned)
	startServeProcess(b, bin, signedAddr, signed)
	plainURL, signedURL := "http://"+plainAddr+"/mcp", "http://"+signedAddr+"/mcp"
	runs := []struct {
		name      string
		args      []string
		wall, cpu time.Duration
	}{
		{name: "digests", args: []string{"verify", plainURL}},
		{name: "nopolicy", args: []string{"verify", signedURL}},
		{name: "trusted-key", args: []string{"verify", "--trusted-key", pub, signedURL}},
	}
	// The first verify of each server warms its caches and this process's
	// connections; it is not measured.
	for _, r := range runs {
		runQuiet(b, r.args...)
	}
	i := 0
	for b.Loop() {
		// Rotate which run goes first: a neighbour's burst on the shared
		// machine then does not always land on the same one.
		for k := range runs {
			r := &runs[(k+i)%len(runs)]
			t0, c0 := time.Now(), cputime.Self()
			pprof.Do(context.Background(), pprof.Labels("run", r.name), func(context.Context) { runQuiet(b, r.args...) })
			r.wall += time.Since(t0)
			r.cpu += cputime.Self() - c0
		}
		i++
	}
	digests, noPolicy, trusted := runs[0], runs[1], runs[2]
	per := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(i) }
	b.ReportMetric(per(digests.wall), "digests-ms/op")
	b.ReportMetric(per(trusted.wall), "trusted-key-ms/op")
	b.ReportMetric(float64(trusted.wall)/float64(digests.wall), "x-digests")
	b.ReportMetric(float64(trusted.cpu)/float64(digests.cpu), "x-digests-cpu")
	b.ReportMetric(float64(noPolicy.wall)/float64(digests.wall), "nopolicy-x-digests")
	b.ReportMetric(float64(noPolicy.cpu)/float64(digests.cpu), "nopolicy-x-digests-cpu")
	b.ReportMetric(float64(trusted.wall)/float64(noPolicy.wall), "x-nopolicy")
	b.ReportMetric(float64(trusted.cpu)/float64(noPolicy.cpu), "x-nopolicy-cpu")
	b.Logf("%d skills of 12 KiB over loopback: verify (unsigned) %v wall, %v CPU; verify (signed, no policy) %v, %v; verify --trusted-key %v, %v: %.2fx wall, %.2fx CPU",
		n, digests.wall/time.Duration(i), digests.cpu/time.Duration(i), noPolicy.wall/time.Duration(i), noPolicy.cpu/time.Duration(i),
		trusted.wall/time.Duration(i), trusted.cpu/time.Duration(i), float64(trusted.wall)/float64(digests.wall), float64(trusted.cpu)/float64(digests.cpu))
}
