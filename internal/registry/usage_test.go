package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/oidctest"
	"github.com/skillport/skillport/internal/peers"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/skillserver"
)

// startServeProcess is serveReplica, returning the process too; flags
// are added to serve's.
func startServeProcess(t *testing.T, dsn string, flags ...string) (*peers.Process, string) {
	t.Helper()
	args := append([]string{skillportBin(t), "serve", "--http", "127.0.0.1:0", "--stateless", "--usage-flush", "100ms"}, flags...)
	p := peers.Start(t, peers.Command{Args: append(args, dsn), Env: os.Environ()})
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, stderr := p.Output()
		if m := servingRE.FindStringSubmatch(stderr); m != nil {
			return p, m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve %s printed no summary within 30s:\n%s", dsn, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func usageRows(t *testing.T, dsn string) map[string]int64 {
	t.Helper()
	rows, err := connect(t, dsn).Query(context.Background(), `SELECT path, caller, sum(loads)::bigint FROM usage GROUP BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for rows.Next() {
		var p, c string
		var n int64
		if err := rows.Scan(&p, &c, &n); err != nil {
			t.Fatal(err)
		}
		out[p+" by "+c] = n
	}
	return out
}

// Two replicas of one database count the loads they serve (skills/get,
// resources/read of SKILL.md; not other files, not errors), the first
// answering them on its thin read path, the second through go-sdk, expose
// per-skill totals without callers on /metrics, and add their counts to
// the database: after a known number of loads, the usage table holds
// exactly them.
func TestUsageTwoReplicas(t *testing.T) {
	dsn := newDB(t)
	publish(t, connect(t, dsn), openCat(t, copyTree(t, examples), "acme"), nil)
	ctx := context.Background()
	loads := []struct{ get, read int }{{3, 1}, {2, 4}}
	want := map[string]int64{}
	for i, n := range loads {
		var flags []string
		if i == 1 {
			flags = []string{"--no-fast-path"}
		}
		proc, url := startServeProcess(t, dsn, flags...)
		client := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil)
		if err := skillclient.Register(client); err != nil {
			t.Fatal(err)
		}
		sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sc := skillclient.New(sess, nil)
		for range n.get {
			if _, err := sc.Get(ctx, "skill://acme/code-review/SKILL.md"); err != nil {
				t.Fatal(err)
			}
		}
		// go-sdk's client keeps a read for its ttl: each read is a client
		// of its own.
		for range n.read {
			other, err := mcp.NewClient(&mcp.Implementation{Name: "reader"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://acme/pdf-processing/SKILL.md"}); err != nil {
				t.Fatal(err)
			}
			other.Close()
		}
		// Not loads: another file of a skill, and a skill that is not there.
		if _, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://acme/code-review/references/CHECKLIST.md"}); err != nil {
			t.Fatal(err)
		}
		if _, err := sc.Get(ctx, "skill://acme/nope/SKILL.md"); err == nil {
			t.Fatal("skills/get of a missing skill succeeded")
		}
		sess.Close()
		_, metrics := get(t, strings.TrimSuffix(url, "/mcp")+"/metrics")
		for _, want := range []string{fmt.Sprintf(`skillport_skill_loads_total{skill="acme/code-review"} %d`, n.get), fmt.Sprintf(`skillport_skill_loads_total{skill="acme/pdf-processing"} %d`, n.read)} {
			if !strings.Contains(metrics, want) {
				t.Errorf("replica %d /metrics lacks %s", i, want)
			}
		}
		if strings.Contains(metrics, "caller=") || strings.Contains(metrics, "CHECKLIST") || strings.Contains(metrics, "acme/nope") {
			t.Errorf("replica %d /metrics names a caller or what was not a load", i)
		}
		// The replica flushes every 100ms: its counts reach the database.
		want["acme/code-review by "] += int64(n.get)
		want["acme/pdf-processing by "] += int64(n.read)
		for deadline := time.Now().Add(30 * time.Second); fmt.Sprint(usageRows(t, dsn)) != fmt.Sprint(want); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after replica %d: usage %v, want %v", i, usageRows(t, dsn), want)
			}
		}
		proc.Stop()
	}
	if want["acme/code-review by "] != 5 || want["acme/pdf-processing by "] != 5 {
		t.Fatalf("the loads sent: %v", want)
	}
}

// The flush runs on its timer: nothing reaches the database before it,
// everything after; callers past the cap are counted as (other), and the
// pairs held stay bounded.
func TestUsageFlushAndCaps(t *testing.T) {
	dsn := newDB(t)
	conn := connect(t, dsn)
	if _, err := registry.Migrate(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		u := registry.NewUsage(conn, &registry.UsageOptions{FlushEvery: time.Minute, MaxCallers: 2, MaxEntries: 3, Logger: discard})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); u.Run(ctx) }()
		for _, c := range []string{"alice", "bob", "carol", "dave", "alice"} {
			u.Count("acme/a", c, 1)
		}
		u.Count("acme/b", "alice", 2) // a fourth pair: over MaxEntries
		u.Count("acme/c", "bob", 1)   // and a fifth
		synctest.Wait()
		if got := usageRows(t, dsn); len(got) != 0 {
			t.Fatalf("usage before the first flush: %v", got)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		want := map[string]int64{"acme/a by alice": 2, "acme/a by bob": 1, "acme/a by (other)": 2, "acme/b by (other)": 2, "acme/c by (other)": 1}
		if got := usageRows(t, dsn); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("usage after the flush: %v, want %v", got, want)
		}
		// The cap is per flush: the next window starts empty.
		u.Count("acme/a", "carol", 1)
		cancel()
		<-done // the last flush, at shutdown
		if got := usageRows(t, dsn); got["acme/a by carol"] != 1 {
			t.Fatalf("usage after the shutdown flush: %v", got)
		}
	})
}

// Loads are counted per caller: the subject of the verified token of a
// replica that requires one (a real OpenID provider on loopback).
func TestUsageCallers(t *testing.T) {
	dsn := newDB(t)
	publish(t, connect(t, dsn), openCat(t, copyTree(t, examples), "acme"), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr
	op := oidctest.Start(t, base+"/mcp")
	p := peers.Start(t, peers.Command{Args: []string{skillportBin(t), "serve", "--http", addr, "--stateless", "--usage-flush", "100ms",
		"--auth-issuer", op.URL, "--auth-audience", base + "/mcp", dsn}, Env: os.Environ()})
	for deadline := time.Now().Add(30 * time.Second); !servingRE.MatchString(func() string { _, e := p.Output(); return e }()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_, e := p.Output()
			t.Fatalf("the replica did not start:\n%s", e)
		}
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	get := func(tok string) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"skills/get","params":{"uri":"skill://acme/code-review/SKILL.md",` + meta + `}}`
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "skills/get")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"result"`) {
			t.Fatalf("skills/get: %d %s", resp.StatusCode, b)
		}
	}
	alice, bob := op.Token(t, "alice"), op.Token(t, "bob")
	get(alice)
	get(bob)
	get(alice)
	want := map[string]int64{"acme/code-review by alice": 2, "acme/code-review by bob": 1}
	for deadline := time.Now().Add(30 * time.Second); fmt.Sprint(usageRows(t, dsn)) != fmt.Sprint(want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("usage %v, want %v", usageRows(t, dsn), want)
		}
	}
}

// A replica counts loads without reading the request again: the server
// parses each body once and tells the counter which skill it served
// (skillserver.Options.OnSkillLoaded). Serving a skills/get with the
// counter costs no more allocations than without it, fewer than one
// json.Unmarshal of the body (what the HTTP middleware that counted
// before did, beside keeping the response's head), on the thin path and
// on go-sdk's.
func TestUsageParsesNothing(t *testing.T) {
	dsn := newDB(t)
	publish(t, connect(t, dsn), openCat(t, copyTree(t, examples), "acme"), nil)
	rs := openReplica(t, dsn)
	body := `{"jsonrpc":"2.0","id":1,"method":"skills/get","params":{"uri":"skill://acme/code-review/SKILL.md"}}`
	parse := testing.AllocsPerRun(100, func() {
		var req struct {
			Method string `json:"method"`
			Params struct {
				URI string `json:"uri"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(body), &req) != nil {
			t.Fatal("the body does not parse")
		}
	})
	var want int64
	for _, noFast := range []bool{false, true} {
		u := rs.Usage(&registry.UsageOptions{Logger: discard})
		var allocs [2]float64
		for i, count := range []bool{false, true} {
			opts := &skillserver.Options{Logger: discard, NoFastPath: noFast}
			if count {
				opts.OnSkillLoaded = u.Loaded
			}
			_, srv, err := skillserver.New(nil, rs, opts)
			if err != nil {
				t.Fatal(err)
			}
			h := srv.HTTPHandler(&skillserver.HTTPOptions{Logger: discard, Stateless: true})
			defer h.Close()
			serve := func() {
				req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if !strings.Contains(w.Body.String(), `"result"`) {
					t.Fatalf("skills/get: %d %s", w.Code, w.Body)
				}
			}
			allocs[i] = testing.AllocsPerRun(50, serve)
		}
		t.Logf("noFastPath=%v: %.0f allocations without counting, %.0f with; one parse of the body: %.0f", noFast, allocs[0], allocs[1], parse)
		if extra := allocs[1] - allocs[0]; extra >= parse {
			t.Errorf("noFastPath=%v: counting a load costs %.0f allocations (one parse of the body: %.0f)", noFast, extra, parse)
		}
		// Every request with the counter was a load: 51 (AllocsPerRun
		// warms up once).
		if err := u.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		want += 51
		if got := usageRows(t, dsn)["acme/code-review by "]; got != want {
			t.Errorf("noFastPath=%v: %d loads in the database, want %d", noFast, got, want)
		}
	}
}
