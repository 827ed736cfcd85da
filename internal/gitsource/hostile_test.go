package gitsource_test

// The git attacks of the hostile-peer report: a smart-HTTP remote on
// loopback, started by the test, answers every fetch with a hand-crafted
// pack. Each attack runs in a child process (this test binary again) so
// that its peak RSS (VmHWM) is its own; every attack is bounded in time by
// the fetch timeout and in bytes by what the server sends.

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/adler32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/internal/gitsource"
)

// pkt is a git pkt-line.
func pkt(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// packEntryOf is one whole-object pack entry: a header declaring typ and
// size, then the zlib stream z.
func packEntryOf(typ byte, size uint64, z []byte) []byte {
	c := typ<<4 | byte(size&15)
	size >>= 4
	var b []byte
	for size != 0 {
		b = append(b, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(append(b, c), z...)
}

func zlibOf(data []byte) []byte {
	var b bytes.Buffer
	w, _ := zlib.NewWriterLevel(&b, zlib.BestSpeed)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// storedZlib is a zlib stream of one stored block: a million of them
// cost nothing to make, where a zlib writer each would.
func storedZlib(data []byte) []byte {
	b := []byte{0x78, 0x01, 0x01}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(data)))
	b = binary.LittleEndian.AppendUint16(b, ^uint16(len(data)))
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, adler32.Checksum(data))
}

// zlibZeros compresses n zero bytes without holding them.
func zlibZeros(n int64) []byte {
	var b bytes.Buffer
	w, _ := zlib.NewWriterLevel(&b, zlib.BestSpeed)
	zero := make([]byte, 1<<20)
	for ; n > 0; n -= int64(len(zero)) {
		w.Write(zero[:min(n, int64(len(zero)))])
	}
	w.Close()
	return b.Bytes()
}

// packOf is a pack declaring count objects, holding body, with its checksum.
func packOf(count uint32, body []byte) []byte {
	p := []byte("PACK\x00\x00\x00\x02")
	p = binary.BigEndian.AppendUint32(p, count)
	p = append(p, body...)
	sum := sha1.Sum(p)
	return append(p, sum[:]...)
}

// hostileRemoteRefs serves one repository whose main branch is a commit
// id that any fetch answers with pack (or, if endless, with a pack header
// and then junk without end); with endlessRefs, the ref advertisement
// never ends instead. Either stops when the client hangs up, or at 4 GiB.
func hostileRemoteRefs(t *testing.T, pack []byte, endless, endlessRefs bool) string {
	t.Helper()
	const tip = "1111111111111111111111111111111111111111"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs"):
			w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
			io.WriteString(w, pkt("# service=git-upload-pack\n")+"0000"+
				pkt(tip+" HEAD\x00symref=HEAD:refs/heads/main ofs-delta agent=hostile\n")+
				pkt(tip+" refs/heads/main\n"))
			for i := 0; endlessRefs && i < 4<<30/100; i++ {
				if _, err := io.WriteString(w, pkt(fmt.Sprintf("%s refs/heads/%s%090d\n", tip, tip, i))); err != nil || r.Context().Err() != nil {
					return
				}
			}
			io.WriteString(w, "0000")
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
			io.WriteString(w, pkt("NAK\n"))
			if _, err := w.Write(pack); err != nil || !endless {
				return
			}
			junk := bytes.Repeat([]byte{0x5a}, 1<<16)
			for sent := 0; sent < 4<<30; sent += len(junk) {
				if _, err := w.Write(junk); err != nil || r.Context().Err() != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return "git+" + srv.URL + "/repo.git@main"
}

// attackResult is what the child process running an attack reports.
type attackResult struct {
	Err        string
	PeakRSS    int64 // VmHWM, bytes; 0 where /proc is missing
	TotalAlloc uint64
	Seconds    float64
	CacheBytes int64 // what the fetch left in the cache directory
}

// runAttack opens spec in a child process and returns what it saw; env
// adds variables (an ssh key and known_hosts) to the child's.
func runAttack(t *testing.T, spec string, timeout time.Duration, maxFetch int64, env ...string) attackResult {
	t.Helper()
	cache := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SKILLPORT_HOSTILE_SPEC="+spec, "SKILLPORT_HOSTILE_CACHE="+cache,
		"SKILLPORT_HOSTILE_TIMEOUT="+timeout.String(), "SKILLPORT_HOSTILE_MAXFETCH="+strconv.FormatInt(maxFetch, 10))
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the attack's child process: %v\n%s", err, out)
	}
	i := bytes.Index(out, []byte("ATTACK "))
	if i < 0 {
		t.Fatalf("the attack's child process said nothing:\n%s", out)
	}
	line, _, _ := bytes.Cut(out[i+len("ATTACK "):], []byte("\n"))
	var res attackResult
	if err := json.Unmarshal(line, &res); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	return res
}

// TestHostileChild runs one attack when started by runAttack; run by
// itself, it has nothing to do.
func TestHostileChild(t *testing.T) {
	spec := os.Getenv("SKILLPORT_HOSTILE_SPEC")
	if spec == "" {
		return
	}
	cache := os.Getenv("SKILLPORT_HOSTILE_CACHE")
	timeout, _ := time.ParseDuration(os.Getenv("SKILLPORT_HOSTILE_TIMEOUT"))
	maxFetch, _ := strconv.ParseInt(os.Getenv("SKILLPORT_HOSTILE_MAXFETCH"), 10, 64)
	sp, err := gitsource.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	creds := &gitsource.Credentials{SSHKey: os.Getenv("SKILLPORT_HOSTILE_SSHKEY"), KnownHosts: os.Getenv("SKILLPORT_HOSTILE_KNOWNHOSTS")}
	_, err = gitsource.Open(context.Background(), sp, &gitsource.Options{CacheDir: cache, Credentials: creds,
		Timeout: timeout, MaxFetch: maxFetch, Logger: newLogger(io.Discard)})
	res := attackResult{Seconds: time.Since(start).Seconds()}
	runtime.ReadMemStats(&m1)
	res.TotalAlloc = m1.TotalAlloc - m0.TotalAlloc
	if err != nil {
		res.Err = err.Error()
	}
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				res.PeakRSS = kb << 10
			}
		}
	}
	filepath.Walk(cache, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			res.CacheBytes += fi.Size()
		}
		return nil
	})
	b, _ := json.Marshal(res)
	fmt.Printf("ATTACK %s\n", b)
}

// hostileBound is what a hostile remote may cost the process fetching
// from it at its peak (VmHWM): a test binary's own footprint plus the
// documented constant of docs/git.md (the pack and objects held while
// indexing, and as many objects as a fetch may hold), with room for the
// garbage collector's slack.
const hostileBound = 192 << 20

// TestHostileRemote runs each attack of a hostile git remote against
// Open: each fails with a one-line error naming the remote and what was
// wrong, within the memory bound and without writing more than the fetch
// cap to the cache directory.
func TestHostileRemote(t *testing.T) {
	const mib = 1 << 20
	zeroBlob := func(n int64) []byte { return packOf(1, packEntryOf(3, uint64(n), zlibZeros(n))) }
	// A header that declares 100 GB before a few hundred bytes of zlib.
	lying := packOf(1, packEntryOf(3, 100<<30, zlibOf(bytes.Repeat([]byte("x"), 256))))
	// A 16 MiB pack whose header claims an object for every two bytes.
	crowd := packOf(8*mib, bytes.Repeat(packEntryOf(3, 1, zlibOf([]byte("a"))), 16*mib/10))
	// As many distinct tiny blobs as a fetch may hold, honestly counted,
	// and one more.
	tiny := func(n int) []byte {
		var body []byte
		for i := range n {
			body = append(body, packEntryOf(3, 4, storedZlib(binary.BigEndian.AppendUint32(nil, uint32(i))))...)
		}
		return packOf(uint32(n), body)
	}
	// A 2 MiB blob declared as 1 KiB: inflation must stop at the header's size.
	long := packOf(1, packEntryOf(3, 1024, zlibZeros(2*mib)))
	cases := []struct {
		name     string
		pack     []byte
		endless  bool
		maxFetch int64
		want     string
		// endlessRefs makes the ref advertisement endless instead.
		endlessRefs bool
	}{
		{"a 256 MiB zero blob", zeroBlob(256 * mib), false, 0, "blob of 268435456 bytes", false},
		{"a 100 GB object declared in a tiny pack", lying, false, 0, "blob of 107374182400 bytes", false},
		{"an object count of len/2", crowd, false, 0, "objects", false},
		{"as many tiny objects as a fetch may hold", tiny(1 << 18), false, 0, "does not point to a commit", false},
		{"one more", tiny(1<<18 + 1), false, 0, "objects, over the 262144", false},
		{"a blob longer than its header", long, false, 0, "longer than", false},
		{"an endless pack", packOf(1, packEntryOf(3, 1024, nil)), true, 8 * mib, "more than 8388608 bytes", false},
		{"an endless ref advertisement", nil, false, 0, "more than", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := hostileRemoteRefs(t, c.pack, c.endless, c.endlessRefs)
			res := runAttack(t, spec, 20*time.Second, c.maxFetch)
			t.Logf("%s: peak RSS %d MiB, allocated %d MiB, %.2f s, %d bytes left in the cache: %s",
				c.name, res.PeakRSS>>20, res.TotalAlloc>>20, res.Seconds, res.CacheBytes, res.Err)
			host := strings.TrimPrefix(strings.TrimSuffix(spec, "@main"), "git+")
			if res.Err == "" || !strings.Contains(res.Err, host) || !strings.Contains(res.Err, c.want) || strings.Contains(res.Err, "\n") {
				t.Errorf("error %q: want one line naming %s and saying %q", res.Err, host, c.want)
			}
			if res.PeakRSS > hostileBound {
				t.Errorf("allocated %d MiB, peak RSS %d MiB: over the %d MiB bound", res.TotalAlloc>>20, res.PeakRSS>>20, hostileBound>>20)
			}
			if c.maxFetch > 0 && res.CacheBytes > c.maxFetch+mib {
				t.Errorf("%d bytes written to the cache, cap %d", res.CacheBytes, c.maxFetch)
			}
			// No wall-clock assertion: an attack that held the fetch until
			// runAttack's deadline fails with a timeout, not with c.want,
			// and the seconds are logged above; a loaded machine must not
			// fail a bound that holds.
		})
	}
}
