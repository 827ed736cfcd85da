package skillserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/cputime"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// floorTree writes the tree the HTTP floor benchmark serves: one skill with
// an 8 KiB SKILL.md and 11 more files (a skills/get entry of 12 files), and
// 99 small skills, so that the first skills/list page holds 100 entries.
func floorTree(b *testing.B) (dir, skill string) {
	body := skillMD("bench", "An 8 KiB skill for the read benchmark")
	body += strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n", (8<<10-len(body))/57+1)
	files := map[string]string{"bench/SKILL.md": body[:8<<10]}
	for i := range 11 {
		files[fmt.Sprintf("bench/references/ref%02d.md", i)] = strings.Repeat("reference\n", 50)
	}
	for i := range 99 {
		name := fmt.Sprintf("skill-%03d", i)
		files[name+"/SKILL.md"] = skillMD(name, "A small skill that fills the first skills/list page")
	}
	return writeTree(b, b.TempDir(), files), "skill://bench/SKILL.md"
}

// floorCall is one JSON-RPC call of the benchmark.
type floorCall struct {
	name, method string
	params       map[string]any
}

// startHTTP serves h on a loopback listener and returns its URL.
func startHTTP(b *testing.B, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	// The server's goroutines carry the label server=floor in profiles.
	go pprof.Do(context.Background(), pprof.Labels("server", "floor"), func(context.Context) { hs.Serve(ln) })
	b.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String()
}

// startOurs composes our server as `skillport serve --http` does: the MCP
// handler of every revision behind package endpoint (limits, origin check,
// metrics, access log), served in this process so that -cpuprofile and
// -memprofile see it. noFast sends every request through go-sdk
// (Options.NoFastPath), the baseline of the thin read path.
func startOurs(b *testing.B, dir string, noFast bool) string {
	label := "ours"
	if noFast {
		label = "sdk"
	}
	return startOursWith(b, dir, label, skillserver.Options{NoFastPath: noFast}, skillserver.HTTPOptions{})
}

// startOursWith is startOurs with the server's and the handler's options
// (loggers are filled in); label names the server's goroutines in
// profiles.
func startOursWith(b *testing.B, dir, label string, opts skillserver.Options, hopts skillserver.HTTPOptions) string {
	ep, h, _, err := composeOurs(dir, opts, hopts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// The server's goroutines carry the label server=ours (or sdk) in
	// profiles: -tagfocus picks a server, -tagignore the clients.
	go pprof.Do(ctx, pprof.Labels("server", label), func(ctx context.Context) { defer close(done); ep.Serve(ctx, ln) })
	b.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String() + "/mcp"
}

// composeOurs builds the endpoint of our server of dir as `skillport
// serve --http` composes it, with the server's and the handler's options
// (loggers filled in), its handler and its server. Close the handler when
// done.
func composeOurs(dir string, opts skillserver.Options, hopts skillserver.HTTPOptions) (*endpoint.Endpoint, *skillserver.HTTPHandler, *skillserver.Server, error) {
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		return nil, nil, nil, err
	}
	src := published.NewCatalogSource(cat)
	opts.Logger, hopts.Logger = discard, discard
	_, srv, err := skillserver.New(nil, src, &opts)
	if err != nil {
		return nil, nil, nil, err
	}
	h := srv.HTTPHandler(&hopts)
	ep, err := endpoint.New(h, &endpoint.Options{Source: src, Sessions: h.Sessions, Logger: discard})
	if err != nil {
		h.Close()
		return nil, nil, nil, err
	}
	return ep, h, srv, nil
}

// floorResults asks our server at url (2026-07-28, stateless) for the
// result of each call, decoded into the types our server encodes, for
// the floor to answer with: as a client that declares the Skills
// Extension asks, or, with superset, as one that declares none (go-sdk's
// and the TypeScript SDK's default clients), whose skills/list pages
// carry the SEP-2076 superset entries.
func floorResults(b *testing.B, url string, calls []floorCall, superset bool) map[string]any {
	results := map[string]any{}
	if superset {
		results[supersetKey] = true
	}
	for _, c := range calls {
		raw := probeResult(b, url, c, superset)
		v := floorValue(c.method, superset)
		if err := json.Unmarshal(raw, v); err != nil {
			b.Fatal(err)
		}
		results[c.method] = v
	}
	return results
}

// probeResult asks the server at url for the result of c once, as
// floorResults does (2026-07-28, stateless; initialize in a session).
func probeResult(b *testing.B, url string, c floorCall, superset bool) json.RawMessage {
	// initialize exists before 2026-07-28 only.
	mode := "stateless"
	if c.method == "initialize" {
		mode = "sessions"
	}
	probe := &floorClient{url: url, mode: mode, hc: http.DefaultClient, noExtension: superset}
	data, err := probe.call(c.method, c.params)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := rpcResult(data)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// supersetKey marks floor results taken as a client without the
// extension asks (floorResults).
const supersetKey = "_superset"

// floorValue returns what the floor decodes a result of method into: the
// type our server encodes it from (for skills/list, the superset's when
// superset is set).
func floorValue(method string, superset bool) any {
	switch method {
	case "resources/read":
		return &skillserver.ReadResourceResult{}
	case wire.MethodGetSkill:
		return &wire.GetSkillResult{}
	case wire.MethodListSkills:
		if superset {
			return &wire.ListResult{}
		}
		return &wire.ListSkillsResult{}
	}
	return &map[string]any{}
}

// floorHandler answers each call with the result our server gave to it,
// decoded once into the same Go types and encoded per request with
// encoding/json: the cost of HTTP and JSON without any MCP machinery.
func floorHandler(results map[string]any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			// A client of a stateless server: no stream to open.
			w.Header().Set("Allow", "POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		res, ok := results[req.Method]
		if !ok {
			http.Error(w, "unknown method", http.StatusBadRequest)
			return
		}
		data, err := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  any             `json:"result"`
		}{"2.0", req.ID, res})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	})
}

// floorClient is one closed-loop client: its own session (sessions mode),
// or none (stateless: 2026-07-28; replica: 2025-11-25 to a stateless
// server, after an initialize; floor). It shares the CPU with the server it
// measures, so it is cheap and the same for every server: it reads each
// response into the one buffer it keeps and checks it against the last
// response it parsed in full (see check).
type floorClient struct {
	url, mode, session string
	hc                 *http.Client
	noExtension        bool // its 2026-07-28 requests declare no capability
	id                 int
	buf                bytes.Buffer // the latest response body
	// head and tail are the last response verified in full, less its id.
	head, tail []byte
	parsed     int // responses parsed in full
}

// open initializes the client's session, in sessions mode, as a client
// that declares the Skills Extension.
func (c *floorClient) open(b *testing.B) {
	if c.mode != "sessions" && c.mode != "replica" {
		return
	}
	if _, err := c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{
		"extensions": map[string]any{wire.ExtensionID: map[string]any{}}}, "clientInfo": map[string]any{"name": "floor", "version": "0"}}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.call("notifications/initialized", nil); err != nil {
		b.Fatal(err)
	}
}

func (c *floorClient) call(method string, params map[string]any) ([]byte, error) {
	c.id++
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	hdr := map[string]string{}
	switch c.mode {
	case "stateless":
		p["_meta"] = modernMeta(!c.noExtension)
		hdr["MCP-Protocol-Version"] = skillserver.ModernProtocolVersion
	case "sessions":
		if c.session != "" {
			hdr["MCP-Protocol-Version"] = "2025-11-25"
			hdr["Mcp-Session-Id"] = c.session
		}
	case "replica":
		hdr["MCP-Protocol-Version"] = "2025-11-25"
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": p}
	if !strings.HasPrefix(method, "notifications/") {
		msg["id"] = c.id
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", method)
	if uri, ok := params["uri"].(string); ok && method == "resources/read" {
		req.Header.Set("Mcp-Name", uri)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	data := c.buf.Bytes()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, data)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.session = sid
	}
	return data, nil
}

// check verifies data, the response to the client's latest call: it is
// the response verified last with this call's id, byte for byte, or else
// it must parse (rpcResult), and it becomes the one compared with next.
// Either way the bytes are checked; the comparison costs a fraction of a
// JSON parse of a large result, CPU the server being measured gets back.
func (c *floorClient) check(data []byte) error {
	id := strconv.Itoa(c.id)
	if c.head != nil && len(data) == len(c.head)+len(id)+len(c.tail) &&
		bytes.HasPrefix(data, c.head) && string(data[len(c.head):len(c.head)+len(id)]) == id &&
		bytes.Equal(data[len(c.head)+len(id):], c.tail) {
		return nil
	}
	c.parsed++
	if _, err := rpcResult(data); err != nil {
		return err
	}
	// The id, echoed in the envelope before the result.
	c.head, c.tail = nil, nil
	at := bytes.Index(data, []byte(`"id":`+id))
	if end := at + len(`"id":`) + len(id); at >= 0 && end < len(data) && (data[end] == ',' || data[end] == '}') &&
		at < bytes.Index(data, []byte(`"result":`)) {
		c.head = bytes.Clone(data[:at+len(`"id":`)])
		c.tail = bytes.Clone(data[end:])
	}
	return nil
}

// rpcResult extracts the result of a JSON or SSE response.
func rpcResult(data []byte) (json.RawMessage, error) {
	if i := bytes.Index(data, []byte("data:")); i >= 0 && !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		data = data[i+len("data:"):]
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			data = data[:j]
		}
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &m); err != nil || m.Result == nil {
		return nil, fmt.Errorf("no result in %.300s (error %s)", data, m.Error)
	}
	return m.Result, nil
}

// floorLoad drives url with clients closed-loop clients sending call for d.
func floorLoad(b *testing.B, url, mode string, clients int, call floorCall, d time.Duration) floorResult {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	cs := make([]*floorClient, clients)
	for i := range cs {
		cs[i] = &floorClient{url: url, mode: mode, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
		cs[i].open(b)
	}
	// The clients' goroutines carry the label client=<mode> in profiles.
	defer pprof.SetGoroutineLabels(context.Background())
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("client", mode)))
	cpu0 := cputime.Self()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	res, first := closedLoop(clients, d, func(i int) error {
		data, err := cs[i].call(call.method, call.params)
		if err == nil {
			err = cs[i].check(data)
		}
		return err
	})
	cpu := cputime.Self() - cpu0
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	if first != "" {
		b.Errorf("%s %s: %d errors, first: %s", mode, call.name, res.errors, first)
	}
	n := max(res.requests, 1)
	parsed := 0
	for _, c := range cs {
		parsed += c.parsed
	}
	return floorResult{
		loadResult: res,
		parsed:     parsed,
		size:       cs[0].buf.Len(),
		gcs:        int(ms1.NumGC - ms0.NumGC),
		cpuUs:      float64(cpu.Microseconds()) / float64(n),
		allocKB:    float64(ms1.TotalAlloc-ms0.TotalAlloc) / 1024 / float64(n),
	}
}

// floorResult adds to a load figure what one request cost this process
// (server and client together): CPU time and bytes allocated. On a shared
// machine these vary far less than req/s.
type floorResult struct {
	loadResult
	cpuUs, allocKB float64
	parsed         int // responses the clients parsed in full
	size           int // bytes of a response body
	gcs            int // garbage collections during the load
}

// BenchmarkHTTPFloor drives, with 32 closed-loop clients over loopback,
// resources/read of an 8 KiB SKILL.md, skills/get of a 12-file skill and
// the first skills/list page (100 skills) against the servers one after
// the other in the same run: the floor (net/http + encoding/json answering
// the same JSON-RPC result, no MCP stack), our server with sessions
// (2025-11-25) and stateless (2026-07-28), and a replica (`serve
// --stateless`) driven by 2025-11-25 clients, all behind package endpoint
// as `skillport serve --http` composes them. It reports each server's req/s,
// p50 and p99 and the req/s ratio of ours to the floor (target ≥ 0.5, p99
// ≤ 25 ms), and, steadier on a shared machine, the CPU time and bytes
// allocated per request, the floor's CPU over ours as a throughput ratio
// (-cpu-µs/req includes the clients, the same for all three). The same
// server without its thin read path (every request through go-sdk,
// "-sdk") runs too, as the baseline of that path: -sdk/thin-cpu is its CPU
// per request over the thin path's.
// -serverbench.duration sets how long each server is driven.
func BenchmarkHTTPFloor(b *testing.B) {
	const clients = 32
	dir, skill := floorTree(b)
	ours := startOurs(b, dir, false)
	sdk := startOurs(b, dir, true)
	// A replica (`serve --stateless --http`) and its clients of 2025-11-25.
	oursR := startOursWith(b, dir, "ours", skillserver.Options{}, skillserver.HTTPOptions{Stateless: true})
	sdkR := startOursWith(b, dir, "sdk", skillserver.Options{NoFastPath: true}, skillserver.HTTPOptions{Stateless: true})
	calls := []floorCall{
		{"read", "resources/read", map[string]any{"uri": skill}},
		{"get", wire.MethodGetSkill, map[string]any{"uri": skill}},
		{"list", wire.MethodListSkills, map[string]any{}},
	}
	// The floor answers with our stateless results, decoded into the
	// types our server encodes.
	results := floorResults(b, ours, calls, false)
	floor := startHTTP(b, floorHandler(results))
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				f := floorLoad(b, floor, "floor", clients, c, *httpDuration)
				s := floorLoad(b, ours, "sessions", clients, c, *httpDuration)
				l := floorLoad(b, ours, "stateless", clients, c, *httpDuration)
				sg := floorLoad(b, sdk, "sessions", clients, c, *httpDuration)
				lg := floorLoad(b, sdk, "stateless", clients, c, *httpDuration)
				rp := floorLoad(b, oursR, "replica", clients, c, *httpDuration)
				rg := floorLoad(b, sdkR, "replica", clients, c, *httpDuration)
				for _, r := range []struct {
					name string
					r    floorResult
				}{{"floor", f}, {"sessions", s}, {"stateless", l}, {"replica", rp}, {"sessions-sdk", sg}, {"stateless-sdk", lg}, {"replica-sdk", rg}} {
					b.Logf("%s %-9s %7d requests %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  %.2fx floor  %6.0f µs CPU/req  %6.1f KiB alloc/req  %d parsed in full, %d-byte bodies, %d GCs",
						c.name, r.name, r.r.requests, r.r.rps, r.r.p50, r.r.p99, r.r.rps/f.rps, r.r.cpuUs, r.r.allocKB, r.r.parsed, r.r.size, r.r.gcs)
					b.ReportMetric(r.r.cpuUs, r.name+"-cpu-µs/req")
					b.ReportMetric(r.r.allocKB, r.name+"-KiB/req")
					b.ReportMetric(r.r.rps, r.name+"-req/s")
					b.ReportMetric(r.r.p50, r.name+"-p50-ms")
					b.ReportMetric(r.r.p99, r.name+"-p99-ms")
				}
				b.ReportMetric(s.rps/f.rps, "sessions/floor")
				b.ReportMetric(l.rps/f.rps, "stateless/floor")
				b.ReportMetric(f.cpuUs/s.cpuUs, "sessions/floor-cpu")
				b.ReportMetric(f.cpuUs/l.cpuUs, "stateless/floor-cpu")
				b.ReportMetric(sg.rps/f.rps, "sessions-sdk/floor")
				b.ReportMetric(lg.rps/f.rps, "stateless-sdk/floor")
				b.ReportMetric(sg.cpuUs/s.cpuUs, "sessions-sdk/thin-cpu")
				b.ReportMetric(lg.cpuUs/l.cpuUs, "stateless-sdk/thin-cpu")
				b.ReportMetric(rp.rps/f.rps, "replica/floor")
				b.ReportMetric(f.cpuUs/rp.cpuUs, "replica/floor-cpu")
				b.ReportMetric(rg.rps/f.rps, "replica-sdk/floor")
				b.ReportMetric(rg.cpuUs/rp.cpuUs, "replica-sdk/thin-cpu")
			}
		})
	}
}
