package access_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/oidctest"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/web"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// nestedRules show the guide to everyone and its nested ops skill to the
// ops group only: the README's own example rule, applied to a skill whose
// folder sits inside a visible one.
const nestedRules = `{"rules": [
	{"anyone": true, "metadata": {"audience": "all"}},
	{"group": "ops", "metadata": {"team": "ops"}},
]}`

var nestedTree = map[string]string{
	"docs/guide/SKILL.md":       "---\nname: guide\ndescription: The guide for everyone.\nmetadata:\n  audience: all\n---\nRead on.\n",
	"docs/guide/intro.md":       "# Intro\n",
	"docs/guide/ops/SKILL.md":   "---\nname: ops\ndescription: The ops team's runbook.\nmetadata:\n  team: ops\n---\nSECRET-RUNBOOK\n",
	"docs/guide/ops/secret.md":  "SECRET-BYTES\n",
	"docs/guide/ops/deep/x.txt": "SECRET-DEEP\n",
}

// writeNested writes nestedTree (without the ops skill unless
// withHidden) to a new directory, every file with the same time, so that
// two trees list alike to the second.
func writeNested(t *testing.T, withHidden bool) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range nestedTree {
		if !withHidden && strings.HasPrefix(p, "docs/guide/ops/") {
			continue
		}
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(filepath.Join(dir, p), time.Unix(1e9, 0), time.Unix(1e9, 0))
	}
	return dir
}

// nestedStack is `serve --http --auth-rules` composed in the test: MCP,
// web catalog and /metrics behind one endpoint, all reading src through
// the rules.
type nestedStack struct {
	base string
	op   *oidctest.OP
}

func startNested(t *testing.T, withHidden bool) *nestedStack {
	t.Helper()
	dir := writeNested(t, withHidden)
	cat, err := catalog.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := access.Parse("rules.jsonc", []byte(nestedRules))
	if err != nil {
		t.Fatal(err)
	}
	filtered := access.Filter(published.NewCatalogSource(cat), rules.Visible)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, _, err := skillserver.New(nil, filtered, &skillserver.Options{Logger: log, CacheScope: wire.CacheScopePrivate})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	op := oidctest.Start(t, base+"/mcp")
	a, err := endpoint.NewAuth(context.Background(), endpoint.AuthOptions{Issuer: op.URL, Audience: base + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	h := skillserver.NewHTTPHandler(s, nil)
	t.Cleanup(func() { h.Close() })
	ep, err := endpoint.New(h, &endpoint.Options{Source: filtered, Auth: a, Logger: log, Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	wh, err := web.New(filtered, &web.Options{Logger: log, Visible: func(r *http.Request, sk *catalog.Skill) bool {
		return rules.Visible(skillserver.CallerFromContext(r.Context()), sk)
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := a.Identify(wh)
	for _, p := range wh.Routes() {
		ep.Handle(p, id)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ep.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return &nestedStack{base: base, op: op}
}

// get answers one route: status and body, the stack's base URL replaced.
func (st *nestedStack) get(t *testing.T, tok, method, path, body string) string {
	t.Helper()
	req, _ := http.NewRequest(method, st.base+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		m, _, _ := strings.Cut(strings.SplitN(body, `"method":"`, 2)[1], `"`)
		req.Header.Set("Mcp-Method", m)
		for _, k := range []string{`"uri":"`, `"name":"`} {
			params, _, _ := strings.Cut(body, `"_meta"`)
			if _, rest, ok := strings.Cut(params, k); ok {
				v, _, _ := strings.Cut(rest, `"`)
				req.Header.Set("Mcp-Name", v)
			}
		}
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := resp.Status + "\n" + strings.ReplaceAll(string(b), st.base, "BASE")
	if path == "/metrics" {
		// The snapshot's gauges; request counts and latencies vary.
		var keep []string
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "skillport_snapshot_") && !strings.HasPrefix(sc.Text(), "skillport_snapshot_age") {
				keep = append(keep, sc.Text())
			}
		}
		out = resp.Status + "\n" + strings.Join(keep, "\n")
	}
	return out
}

// rpc is a stateless (2026-07-28) JSON-RPC request body.
func rpc(method, params string) string {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/skills":{}}}}`
	if params != "" {
		params += ","
	}
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + meta + `}}`
}

// TestHiddenNestedSkill: a skill hidden by a metadata rule whose folder
// sits inside a visible skill's folder is, to a caller who may not see
// it, exactly a skill that does not exist, on every route: every answer
// of a server holding it equals the answer of a server without it.
func TestHiddenNestedSkill(t *testing.T) {
	hidden, absent := startNested(t, true), startNested(t, false)
	type route struct{ method, path, body string }
	routes := []route{
		{"POST", "/mcp", rpc("skills/list", "")},
		{"POST", "/mcp", rpc("skills/get", `"name":"guide"`)},
		{"POST", "/mcp", rpc("skills/get", `"name":"ops"`)},
		{"POST", "/mcp", rpc("resources/list", "")},
		{"POST", "/mcp", rpc("resources/read", `"uri":"skill://index.json"`)},
		{"POST", "/mcp", rpc("resources/read", `"uri":"skill://docs/guide/SKILL.md"`)},
		{"POST", "/mcp", rpc("resources/read", `"uri":"skill://docs/guide/ops/SKILL.md"`)},
		{"POST", "/mcp", rpc("resources/read", `"uri":"skill://docs/guide/ops/secret.md"`)},
		{"POST", "/mcp", rpc("resources/read", `"uri":"skill://docs/guide/ops/deep/x.txt"`)},
		{"POST", "/mcp", rpc("resources/directory/read", `"uri":"skill://docs/guide"`)},
		{"POST", "/mcp", rpc("resources/directory/read", `"uri":"skill://docs/guide/ops"`)},
		{"POST", "/mcp", rpc("resources/directory/read", `"uri":"skill://docs/guide/ops/deep"`)},
		{"POST", "/mcp", rpc("resources/directory/read", `"uri":"skill://docs"`)},
		{"POST", "/mcp", rpc("skills/read", `"name":"guide"`)},
		{"POST", "/mcp", rpc("skills/read", `"name":"ops"`)},
		{"POST", "/mcp", rpc("skills/read_reference", `"name":"guide","reference":"ops/secret.md"`)},
		{"POST", "/mcp", rpc("skills/read_reference", `"name":"guide","reference":"ops/deep/x.txt"`)},
		{"GET", "/", ""},
		{"GET", "/?q=ops", ""},
		{"GET", "/search.json?q=ops", ""},
		{"GET", "/search.json?q=guide", ""},
		{"GET", "/s/docs/guide/", ""},
		{"GET", "/s/docs/guide/ops/", ""},
		{"GET", "/s/docs/guide/ops/secret.md", ""},
		{"GET", "/raw/docs/guide/ops/secret.md", ""},
		{"GET", "/raw/docs/guide/ops/SKILL.md", ""},
		{"GET", "/archive/docs/guide.tar.gz", ""},
		{"GET", "/archive/docs/guide/ops.tar.gz", ""},
		{"GET", web.WellKnownPath, ""},
		{"GET", "/metrics", ""},
	}
	for _, who := range []string{"", "bob"} {
		var tokH, tokA string
		if who != "" {
			tokH, tokA = hidden.op.Token(t, who), absent.op.Token(t, who)
		}
		for _, r := range routes {
			h := hidden.get(t, tokH, r.method, r.path, r.body)
			a := absent.get(t, tokA, r.method, r.path, r.body)
			if h != a {
				t.Errorf("caller %q, %s %s %s:\nwith the hidden skill:\n%s\nwithout it:\n%s", who, r.method, r.path, r.body, h, a)
			}
			for _, secret := range []string{"SECRET", "runbook", "team"} {
				if strings.Contains(h, secret) {
					t.Errorf("caller %q, %s %s %s shows %q:\n%s", who, r.method, r.path, r.body, secret, h)
				}
			}
		}
	}
	// /metrics needs a token where /mcp does, and its gauges count what an
	// anonymous caller sees (the guide, two files), whoever asks.
	if got := hidden.get(t, "", "GET", "/metrics", ""); !strings.HasPrefix(got, "401") {
		t.Errorf("/metrics without a token: %s", got)
	}
	alice := hidden.op.Token(t, "alice")
	if got := hidden.get(t, alice, "GET", "/metrics", ""); !strings.Contains(got, "skillport_snapshot_skills 1") || !strings.Contains(got, "skillport_snapshot_files 2") {
		t.Errorf("/metrics for a member of ops: %s", got)
	}
	// The control: a member of ops reads what bob cannot.
	if got := hidden.get(t, alice, "POST", "/mcp", rpc("resources/read", `"uri":"skill://docs/guide/ops/secret.md"`)); !strings.Contains(got, "SECRET-BYTES") {
		t.Errorf("alice cannot read the ops skill: %s", got)
	}
	if got := hidden.get(t, alice, "POST", "/mcp", rpc("skills/read_reference", `"name":"guide","reference":"ops/secret.md"`)); !strings.Contains(got, "SECRET-BYTES") {
		t.Errorf("alice cannot read the ops skill's file through the seed-001 profile: %s", got)
	}
	if got := hidden.get(t, alice, "GET", "/raw/docs/guide/ops/secret.md", ""); !strings.HasPrefix(got, "200") {
		t.Errorf("alice cannot download the ops skill's file: %s", got)
	}
}

// TestHiddenNestedNotifications: a change inside a hidden nested skill is
// announced to the session that may see it (list_changed, and updated for
// the file it subscribed to), never to one that may not, although the
// visible skill around it contains the file's folder.
func TestHiddenNestedNotifications(t *testing.T) {
	dir := writeNested(t, true)
	cat, err := catalog.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := published.NewCatalogSource(cat)
	rules, err := access.Parse("rules.jsonc", []byte(nestedRules))
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := skillserver.New(nil, access.Filter(src, rules.Visible), &skillserver.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), CacheScope: wire.CacheScopePrivate, ListChangedDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	tokens := map[string]*auth.TokenInfo{
		"tok-olga": {UserID: "olga", Extra: map[string]any{"groups": []string{"ops"}}},
		"tok-bob":  {UserID: "bob"},
	}
	hs := httptest.NewServer(auth.RequireBearerToken(verifyFrom(tokens), nil)(h))
	t.Cleanup(hs.Close)
	ctx := context.Background()
	olga, on := connect(t, hs.URL, "tok-olga")
	bob, bn := connect(t, hs.URL, "tok-bob")
	const (
		secret = "skill://docs/guide/ops/secret.md"
		guide  = "skill://docs/guide/SKILL.md"
	)
	if err := olga.Subscribe(ctx, &mcp.SubscribeParams{URI: secret}); err != nil {
		t.Fatalf("olga cannot subscribe to the ops skill's file: %v", err)
	}
	if err := bob.Subscribe(ctx, &mcp.SubscribeParams{URI: secret}); err == nil {
		t.Errorf("bob subscribed to a hidden skill's file")
	}
	for _, cs := range []*mcp.ClientSession{olga, bob} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: guide}); err != nil {
			t.Fatal(err)
		}
	}
	swap := func(path string) {
		t.Helper()
		p := filepath.Join(dir, path)
		b, _ := os.ReadFile(p)
		os.WriteFile(p, append(b, "more\n"...), 0o644)
		c, err := src.Catalog().Reload()
		if err != nil {
			t.Fatal(err)
		}
		src.Swap(c)
	}
	// The hidden nested skill's file changes: olga hears of it.
	swap("docs/guide/ops/secret.md")
	waitFor(t, "olga's list_changed and updated for "+secret, func() bool {
		l, u := on.get()
		return l == 1 && len(u) == 1 && u[0] == secret
	})
	// Then the visible guide changes: once bob hears of that, anything he
	// would have been told of the first change has arrived before it.
	swap("docs/guide/SKILL.md")
	waitFor(t, "bob's notifications of the guide", func() bool {
		l, u := bn.get()
		return l > 0 && len(u) > 0 && u[len(u)-1] == guide
	})
	if l, u := bn.get(); l != 1 || len(u) != 1 {
		t.Errorf("bob was told about a change inside a skill he cannot see: %d list_changed, updated %v", l, u)
	}
}
