package skillserver_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rssKiB reads a memory figure (VmRSS, VmHWM) of a process from /proc.
func rssKiB(b *testing.B, pid int, field string) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("reading the server's memory: %v", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err == nil {
				return n
			}
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// BenchmarkSessionFlood sends 20,000 initialize requests, on 8 keep-alive
// connections over loopback, to `skillport serve --http` with the default
// session cap and, as the baseline of the same run, with the cap off
// (--max-sessions 0). It reports the server's peak RSS in each case, the
// ratio between them, and how many sessions were refused. The count is
// fixed: run it with -benchtime 1x.
func BenchmarkSessionFlood(b *testing.B) {
	const total, workers = 20000, 8
	peak := map[string]float64{}
	for _, tc := range []struct {
		name  string
		flags []string
	}{{"uncapped", []string{"--max-sessions", "0"}}, {"default", nil}} {
		b.Run(tc.name, func(b *testing.B) {
			srv := serveHTTP(b, examples, tc.flags...)
			pid := srv.cmd.Process.Pid
			idle := rssKiB(b, pid, "VmRSS")
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}}`)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}, Timeout: 30 * time.Second}
			defer client.CloseIdleConnections()
			var ok, refused, other atomic.Int64
			var next atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for next.Add(1) <= total {
						req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Accept", "application/json, text/event-stream")
						resp, err := client.Do(req)
						if err != nil {
							other.Add(1)
							continue
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						switch resp.StatusCode {
						case http.StatusOK:
							ok.Add(1)
						case http.StatusServiceUnavailable:
							refused.Add(1)
						default:
							other.Add(1)
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			hwm := rssKiB(b, pid, "VmHWM")
			peak[tc.name] = hwm
			if other.Load() > 0 {
				b.Errorf("%d initialize requests failed otherwise than 200 or 503", other.Load())
			}
			b.ReportMetric(idle/1024, "idle-RSS-MB")
			b.ReportMetric(hwm/1024, "peak-RSS-MB")
			b.ReportMetric(float64(ok.Load()), "sessions")
			b.ReportMetric(float64(refused.Load()), "refused")
			b.ReportMetric(float64(total)/elapsed.Seconds(), "init/s")
			if base := peak["uncapped"]; tc.name == "default" && base > 0 {
				b.ReportMetric(hwm/base, "peak-ratio-vs-uncapped")
			}
		})
	}
}
