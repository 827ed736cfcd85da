package skillserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// twin is the same catalog served twice, with and without the thin read
// path, so that a test can send one request to both and compare.
type twin struct {
	fast, slow       string // MCP endpoint URLs
	fastSrv, slowSrv *skillserver.Server
}

// twins calls serve with two servers of the example skills, the same
// but for the thin read path (noFast: without it), which share a cursor
// key, so that their answers can be compared byte for byte.
func twins(t *testing.T, opts skillserver.Options, serve func(noFast bool, s *mcp.Server, srv *skillserver.Server)) {
	t.Helper()
	cat, err := catalog.OpenDir(examples, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger, opts.CursorKey = discard, []byte("twin cursor key, shared by both")
	for _, noFast := range []bool{false, true} {
		o := opts
		o.NoFastPath = noFast
		s, srv, err := skillserver.New(nil, published.NewCatalogSource(cat), &o)
		if err != nil {
			t.Fatal(err)
		}
		serve(noFast, s, srv)
	}
}

func newTwin(t *testing.T, opts skillserver.Options) *twin { return newTwinHTTP(t, opts, false) }

// newTwinHTTP is newTwin with the handlers stateless or not.
func newTwinHTTP(t *testing.T, opts skillserver.Options, stateless bool) *twin {
	t.Helper()
	tw := &twin{}
	twins(t, opts, func(noFast bool, s *mcp.Server, srv *skillserver.Server) {
		h := srv.HTTPHandler(&skillserver.HTTPOptions{Logger: discard, Stateless: stateless})
		t.Cleanup(func() { h.Close() })
		p := mount(t, h)
		if noFast {
			tw.slow, tw.slowSrv = p.url, srv
		} else {
			tw.fast, tw.fastSrv = p.url, srv
		}
	})
	return tw
}

// exchange is what a client sees of one HTTP response.
type exchange struct {
	status int
	header string // the headers go-sdk sets, in a fixed order
	body   string
}

func rawPost(t *testing.T, url string, header http.Header, body string) exchange {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header = header.Clone()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var hs []string
	for _, k := range []string{"Content-Type", "Cache-Control", "Connection", "Allow", "Retry-After"} {
		hs = append(hs, k+": "+resp.Header.Get(k))
	}
	return exchange{status: resp.StatusCode, header: strings.Join(hs, "; "), body: string(data)}
}

func headers(kv ...string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			h.Del(kv[i])
		} else {
			h.Set(kv[i], kv[i+1])
		}
	}
	return h
}

// goldenCalls are the requests of TestGolden, and a few more that page,
// fail and pass through.
var goldenCalls = []struct {
	name, method, params string
}{
	{"skills-list", "skills/list", `{}`},
	{"skills-list-no-params", "skills/list", ``},
	{"skills-get-pdf-processing", "skills/get", `{"uri":"skill://pdf-processing/SKILL.md"}`},
	{"skills-get-refunds", "skills/get", `{"uri":"skill://acme/billing/refunds/SKILL.md"}`},
	{"skills-get-unknown", "skills/get", `{"uri":"skill://acme/billing/chargebacks/SKILL.md"}`},
	{"skills-get-by-name", "skills/get", `{"name":"pdf-processing"}`},
	{"skills-get-no-uri", "skills/get", `{}`},
	{"resources-read-skill-md", "resources/read", `{"uri":"skill://git-workflow/SKILL.md"}`},
	{"resources-read-png", "resources/read", `{"uri":"skill://pdf-processing/assets/logo.png"}`},
	{"resources-read-directory", "resources/read", `{"uri":"skill://pdf-processing/references"}`},
	{"resources-read-unknown", "resources/read", `{"uri":"skill://nope/SKILL.md"}`},
	{"resources-read-foreign", "resources/read", `{"uri":"file:///etc/passwd"}`},
	{"resources-read-escaped", "resources/read", `{"uri":"skill:\/\/git-workflow/SKILL.md"}`},
	{"resources-read-uri-number", "resources/read", `{"uri":5}`},
	{"directory-read-skill-root", "resources/directory/read", `{"uri":"skill://pdf-processing"}`},
	{"directory-read-prefix", "resources/directory/read", `{"uri":"skill://acme/billing"}`},
	{"directory-read-file", "resources/directory/read", `{"uri":"skill://pdf-processing/SKILL.md"}`},
	{"directory-read-bad-cursor", "resources/directory/read", `{"uri":"skill://pdf-processing","cursor":"sp1.AAAA"}`},
	{"skills-list-bad-cursor", "skills/list", `{"cursor":"sp1.AAAA"}`},
	{"skills-list-unknown-member", "skills/list", `{"limit":2}`},
}

// thinPathFor reports whether the thin path is meant to answer a golden
// call: a result of one of its methods, asked in the plain form.
func thinPathFor(name, method string, ex exchange) bool {
	return ex.status == 200 && !strings.Contains(ex.body, `"error"`) &&
		!strings.Contains(name, "escaped") && !strings.Contains(name, "unknown-member") && !strings.Contains(name, "by-name")
}

// pageAll lists every page of method, whose params begin with open (an
// object left open for the cursor), through call.
func pageAll(t *testing.T, method, open string, call func(params string) exchange) {
	t.Helper()
	cursor := ""
	for range 20 {
		params := strings.TrimSuffix(open, ",") + `}`
		if cursor != "" {
			params = open + `"cursor":"` + cursor + `"}`
		}
		ex := call(params)
		var m struct {
			Result struct {
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		data := strings.TrimPrefix(strings.TrimSpace(ex.body), "event: message\ndata: ")
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("%s page: %v: %s", method, err, ex.body)
		}
		if cursor = m.Result.NextCursor; cursor == "" {
			return
		}
	}
	t.Fatalf("%s: more than 20 pages", method)
}

// withMeta puts a 2026-07-28 _meta into params.
func withMeta(params string, extension bool) string {
	meta, _ := json.Marshal(modernMeta(extension))
	if params == "" || params == "{}" {
		return `{"_meta":` + string(meta) + `}`
	}
	return `{"_meta":` + string(meta) + `,` + params[1:]
}

func request(id, method, params string) string {
	if params == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q}`, id, method)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
}

// TestFastPathMatchesSDK sends every golden request, and variants go-sdk
// checks (headers, _meta, ids), to a server with the thin read path and to
// one without, and requires the same status, headers and bytes; and that
// the thin path answered the requests it is meant for.
func TestFastPathMatchesSDK(t *testing.T) {
	for _, profiles := range [][]skillserver.Profile{{skillserver.ProfileSEP2640}, nil} {
		tw := newTwin(t, skillserver.Options{TTL: 5 * time.Minute, PageSize: 2, Profiles: profiles})
		compare := func(t *testing.T, name string, fastH, slowH http.Header, body string) exchange {
			t.Helper()
			f := rawPost(t, tw.fast, fastH, body)
			s := rawPost(t, tw.slow, slowH, body)
			if f != s {
				t.Errorf("%s: the thin path answers\n%d %s\n%s\ngo-sdk answers\n%d %s\n%s", name, f.status, f.header, f.body, s.status, s.header, s.body)
			}
			return f
		}
		t.Run(fmt.Sprintf("profiles=%v/stateless", profiles), func(t *testing.T) {
			for _, ext := range []bool{true, false} {
				for _, c := range goldenCalls {
					uri := ""
					if i := strings.Index(c.params, `"uri":"`); i >= 0 {
						uri = strings.SplitN(c.params[i+7:], `"`, 2)[0]
					}
					h := headers("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", c.method, "Mcp-Name", uri)
					before := skillserver.FastServed(tw.fastSrv)
					ex := compare(t, c.name, h, h, request("7", c.method, withMeta(c.params, ext)))
					served := skillserver.FastServed(tw.fastSrv) > before
					if ok := thinPathFor(c.name, c.method, ex); ok != served {
						t.Errorf("%s (extension %v): thin path answered: %v, want %v", c.name, ext, served, ok)
					}
				}
			}
			// Variants go-sdk checks, each of which the thin path must
			// leave to go-sdk or answer identically.
			read := `{"uri":"skill://git-workflow/SKILL.md"}`
			base := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read", "Mcp-Name", "skill://git-workflow/SKILL.md"}
			for _, v := range []struct {
				name   string
				header []string
				body   string
			}{
				{"ok", nil, request("1", "resources/read", withMeta(read, true))},
				{"string id", nil, request(`"a<b"`, "resources/read", withMeta(read, true))},
				{"float id", nil, request("1.0", "resources/read", withMeta(read, true))},
				{"huge id", nil, request("123456789012345678901", "resources/read", withMeta(read, true))},
				{"no Mcp-Method", []string{"Mcp-Method", ""}, request("1", "resources/read", withMeta(read, true))},
				{"Mcp-Method mismatch", []string{"Mcp-Method", "skills/get"}, request("1", "resources/read", withMeta(read, true))},
				{"no Mcp-Name", []string{"Mcp-Name", ""}, request("1", "resources/read", withMeta(read, true))},
				{"Mcp-Name mismatch", []string{"Mcp-Name", "skill://x/SKILL.md"}, request("1", "resources/read", withMeta(read, true))},
				{"no _meta", nil, request("1", "resources/read", read)},
				{"_meta version mismatch", nil, request("1", "resources/read", strings.Replace(withMeta(read, true), `"2026-07-28"`, `"2025-11-25"`, 1))},
				{"no capabilities", nil, request("1", "resources/read", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"uri":"skill://git-workflow/SKILL.md"}`)},
				{"header version unknown", []string{"MCP-Protocol-Version", "2099-01-01"}, request("1", "resources/read", withMeta(read, true))},
				{"Accept JSON only", []string{"Accept", "application/json"}, request("1", "resources/read", withMeta(read, true))},
				{"Accept */*", []string{"Accept", "*/*"}, request("1", "resources/read", withMeta(read, true))},
				{"Content-Type text", []string{"Content-Type", "text/plain"}, request("1", "resources/read", withMeta(read, true))},
				{"Content-Type charset", []string{"Content-Type", "application/json; charset=utf-8"}, request("1", "resources/read", withMeta(read, true))},
				{"Last-Event-ID", []string{"Last-Event-ID", "x_1"}, request("1", "resources/read", withMeta(read, true))},
				{"batch", nil, "[" + request("1", "resources/read", withMeta(read, true)) + "]"},
				{"notification", nil, `{"jsonrpc":"2.0","method":"resources/read","params":` + withMeta(read, true) + `}`},
				{"bad jsonrpc", nil, strings.Replace(request("1", "resources/read", withMeta(read, true)), `"2.0"`, `"1.0"`, 1)},
				{"duplicate key", nil, strings.Replace(request("1", "resources/read", withMeta(read, true)), `"id":1`, `"id":1,"id":2`, 1)},
				{"upper-case key", nil, strings.Replace(request("1", "resources/read", withMeta(read, true)), `"method"`, `"METHOD"`, 1)},
				{"session id", []string{"Mcp-Session-Id", "nonexistent"}, request("1", "resources/read", withMeta(read, true))},
				{"empty", nil, ""},
				{"not JSON", nil, "{"},
			} {
				h := headers(append(append([]string{}, base...), v.header...)...)
				compare(t, v.name, h, h, v.body)
			}
		})
		t.Run(fmt.Sprintf("profiles=%v/sessions", profiles), func(t *testing.T) {
			for _, version := range []string{"2025-11-25", "2025-06-18"} {
				for _, ext := range []bool{true, false} {
					fp, sp := &httpPeer{t: t, url: tw.fast}, &httpPeer{t: t, url: tw.slow}
					fsid, _ := fp.initialize(version, ext)
					ssid, _ := sp.initialize(version, ext)
					fh := headers("MCP-Protocol-Version", version, "Mcp-Session-Id", fsid)
					sh := headers("MCP-Protocol-Version", version, "Mcp-Session-Id", ssid)
					for _, c := range goldenCalls {
						before := skillserver.FastServed(tw.fastSrv)
						ex := compare(t, c.name, fh, sh, request("9", c.method, c.params))
						served := skillserver.FastServed(tw.fastSrv) > before
						if ok := thinPathFor(c.name, c.method, ex); ok && !served {
							t.Errorf("%s (%s, extension %v): the thin path did not answer", c.name, version, ext)
						} else if !ok && served {
							t.Errorf("%s (%s, extension %v): the thin path answered what go-sdk must", c.name, version, ext)
						}
					}
					// Paging follows cursors the same way.
					for _, list := range []struct{ method, params string }{
						{wire.MethodListSkills, `{`},
						{wire.MethodReadDirectory, `{"uri":"skill://pdf-processing",`},
					} {
						pageAll(t, list.method, list.params, func(body string) exchange {
							return compare(t, "page", fh, sh, request("3", list.method, body))
						})
					}
					// A request with _meta (a progress token) goes to go-sdk.
					compare(t, "progress token", fh, sh, request("4", "resources/read", `{"_meta":{"progressToken":1},"uri":"skill://git-workflow/SKILL.md"}`))
					// After DELETE the session is gone for both.
					for _, p := range []struct {
						url, sid string
					}{{tw.fast, fsid}, {tw.slow, ssid}} {
						req, _ := http.NewRequest(http.MethodDelete, p.url, nil)
						req.Header.Set("Mcp-Session-Id", p.sid)
						req.Header.Set("MCP-Protocol-Version", version)
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							t.Fatal(err)
						}
						resp.Body.Close()
					}
					deadline := time.Now().Add(5 * time.Second)
					for {
						f := rawPost(t, tw.fast, fh, request("5", "resources/read", `{"uri":"skill://git-workflow/SKILL.md"}`))
						if f.status == http.StatusNotFound || time.Now().After(deadline) {
							s := rawPost(t, tw.slow, sh, request("5", "resources/read", `{"uri":"skill://git-workflow/SKILL.md"}`))
							if f != s {
								t.Errorf("after DELETE: the thin path answers %d %s, go-sdk %d %s", f.status, f.body, s.status, s.body)
							}
							break
						}
						time.Sleep(10 * time.Millisecond)
					}
				}
			}
		})
	}
}

// TestFastPathBody checks that a request the thin path declines reaches
// go-sdk whole, however it was cut.
func TestFastPathBody(t *testing.T) {
	tw := newTwin(t, skillserver.Options{})
	big := request("1", "resources/read", `{"uri":"skill://git-workflow/SKILL.md","pad":"`+strings.Repeat("x", 5<<20)+`"}`)
	h := headers("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read", "Mcp-Name", "skill://git-workflow/SKILL.md")
	f, s := rawPost(t, tw.fast, h, big), rawPost(t, tw.slow, h, big)
	if f != s {
		t.Errorf("oversized body: thin path %d %s, go-sdk %d %s", f.status, f.body, s.status, s.body)
	}
	if !bytes.Contains([]byte(f.body), []byte("exceeds")) {
		t.Errorf("oversized body: want go-sdk's size error, got %d %s", f.status, f.body)
	}
}

// TestFastReadSeesChanges checks that the thin path's encoded reads never
// outlive the file: a SKILL.md changed on disk is read anew (the server
// re-indexes, as go-sdk's path does), not served from what was encoded.
func TestFastReadSeesChanges(t *testing.T) {
	dir := writeTree(t, t.TempDir(), map[string]string{"a/SKILL.md": skillMD("a", "First version.")})
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	_, srv, err := skillserver.New(nil, published.NewCatalogSource(cat), &skillserver.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.HTTPHandler(&skillserver.HTTPOptions{Logger: discard})
	t.Cleanup(func() { h.Close() })
	url := mount(t, h).url
	hd := headers("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read", "Mcp-Name", "skill://a/SKILL.md")
	read := request("1", "resources/read", withMeta(`{"uri":"skill://a/SKILL.md"}`, true))
	for range 2 {
		if ex := rawPost(t, url, hd, read); !strings.Contains(ex.body, "First version.") {
			t.Fatalf("first read: %d %s", ex.status, ex.body)
		}
	}
	writeTree(t, dir, map[string]string{"a/SKILL.md": skillMD("a", "Second version, longer.")})
	if ex := rawPost(t, url, hd, read); !strings.Contains(ex.body, "Second version, longer.") {
		t.Fatalf("read after the change: %d %s", ex.status, ex.body)
	}
	if skillserver.FastServed(srv) < 2 {
		t.Errorf("the thin path answered %d reads, want at least 2", skillserver.FastServed(srv))
	}
}

// perCaller publishes one skill to everyone and another only to "alice".
type perCaller struct{ open, secret *catalog.Skill }

func (p *perCaller) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	if c := skillserver.CallerFromContext(ctx); c != nil && c.Subject == "alice" {
		return []*catalog.Skill{p.open, p.secret}, nil
	}
	return []*catalog.Skill{p.open}, nil
}

var perCallerFiles = map[string][]byte{
	"skill://open/SKILL.md":   []byte(skillMD("open", "Everyone sees it.")),
	"skill://secret/SKILL.md": []byte(skillMD("secret", "Only alice sees it.")),
}

func (p *perCaller) ReadFile(_ context.Context, f *catalog.File) ([]byte, error) {
	return perCallerFiles[f.URI], nil
}

// TestFastPathCallerView checks that the thin path answers each caller
// from the snapshot its source gives that caller, as go-sdk's path does:
// what one caller may not see, the thin path does not show it either.
func TestFastPathCallerView(t *testing.T) {
	var p perCaller
	for name, sk := range map[string]**catalog.Skill{"open": &p.open, "secret": &p.secret} {
		s, err := catalog.NewSkill("skill://"+name, map[string][]byte{"SKILL.md": perCallerFiles["skill://"+name+"/SKILL.md"]})
		if err != nil {
			t.Fatal(err)
		}
		*sk = s
	}
	var urls [2]string
	var fastSrv *skillserver.Server
	for i, noFast := range []bool{false, true} {
		_, srv, err := skillserver.New(nil, &p, &skillserver.Options{Logger: discard, NoFastPath: noFast, CacheScope: "private"})
		if err != nil {
			t.Fatal(err)
		}
		if !noFast {
			fastSrv = srv
		}
		h := srv.HTTPHandler(&skillserver.HTTPOptions{Logger: discard})
		t.Cleanup(func() { h.Close() })
		// Stands for package endpoint, which names the caller of a
		// verified token.
		named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u := r.Header.Get("X-Test-User"); u != "" {
				r = r.WithContext(skillserver.ContextWithCaller(r.Context(), &skillserver.Caller{Subject: u}))
			}
			h.ServeHTTP(w, r)
		})
		urls[i] = mount(t, named).url
	}
	// ext false: the superset entries of a client without the extension,
	// whose first page is kept encoded too (fast_list.go).
	for _, ext := range []bool{true, false} {
		for _, user := range []string{"alice", "bob", "alice", ""} {
			for _, c := range []struct{ method, params string }{
				{"skills/list", `{}`},
				{"skills/get", `{"uri":"skill://secret/SKILL.md"}`},
				{"resources/read", `{"uri":"skill://secret/SKILL.md"}`},
				{"resources/read", `{"uri":"skill://open/SKILL.md"}`},
			} {
				uri := ""
				if i := strings.Index(c.params, `"uri":"`); i >= 0 {
					uri = strings.SplitN(c.params[i+7:], `"`, 2)[0]
				}
				h := headers("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", c.method, "Mcp-Name", uri, "X-Test-User", user)
				body := request("1", c.method, withMeta(c.params, ext))
				before := skillserver.FastServed(fastSrv)
				f, s := rawPost(t, urls[0], h, body), rawPost(t, urls[1], h, body)
				if f != s {
					t.Errorf("%s %s as %q: the thin path answers\n%s\ngo-sdk answers\n%s", c.method, c.params, user, f.body, s.body)
				}
				secret := strings.Contains(f.body, "Only alice sees it")
				if secret != (user == "alice" && c.method != "resources/read" || user == "alice" && strings.Contains(uri, "secret")) {
					t.Errorf("%s %s as %q: the secret skill shown: %v", c.method, c.params, user, secret)
				}
				if served := skillserver.FastServed(fastSrv) > before; served != !strings.Contains(f.body, `"error"`) {
					t.Errorf("%s %s as %q: thin path answered %v for %s", c.method, c.params, user, served, f.body)
				}
			}
		}
	}
}

// TestFastPathConcurrent: responses the thin path assembles in shared
// buffers at the same time are each whole and its own: many clients at
// once, a mix of large and small answers, every body equal to go-sdk's.
// A buffer reused while its response is still being written shows as a
// wrong body here now and then, and as a data race under -race always.
func TestFastPathConcurrent(t *testing.T) {
	tw := newTwin(t, skillserver.Options{})
	type call struct{ method, params, uri string }
	calls := []call{
		{"skills/list", `{}`, ""},
		{"skills/get", `{"uri":"skill://pdf-processing/SKILL.md"}`, ""},
		{"resources/read", `{"uri":"skill://git-workflow/SKILL.md"}`, "skill://git-workflow/SKILL.md"},
		{"resources/read", `{"uri":"skill://pdf-processing/assets/logo.png"}`, "skill://pdf-processing/assets/logo.png"},
	}
	hdr := func(c call) http.Header {
		return headers("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", c.method, "Mcp-Name", c.uri)
	}
	want := make([]string, len(calls))
	for i, c := range calls {
		want[i] = rawPost(t, tw.slow, hdr(c), request("1", c.method, withMeta(c.params, true))).body
	}
	// rawPost, but safe off the test's goroutine.
	post := func(url string, h http.Header, body string) (string, error) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return string(data), err
	}
	before := skillserver.FastServed(tw.fastSrv)
	const clients, each = 16, 40
	errs := make(chan string, clients*each)
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			for n := range each {
				i := (g + n) % len(calls)
				c := calls[i]
				id := strconv.Itoa(g*each + n + 2)
				got, err := post(tw.fast, hdr(c), request(id, c.method, withMeta(c.params, true)))
				if err != nil {
					errs <- fmt.Sprintf("%s %s (id %s): %v", c.method, c.params, id, err)
					continue
				}
				if w := strings.Replace(want[i], `"id":1,`, `"id":`+id+`,`, 1); got != w {
					errs <- fmt.Sprintf("%s %s (id %s): got %.200s…, want %.200s…", c.method, c.params, id, got, w)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := skillserver.FastServed(tw.fastSrv) - before; n != clients*each {
		t.Errorf("the thin path answered %d of %d requests", n, clients*each)
	}
}

// statelessProfileSets are the sets of profiles TestFastPathStatelessMatchesSDK
// serves: the extension alone and the defaults; profile_sep2076_test.go adds
// the extension with one legacy profile.
var statelessProfileSets = [][]skillserver.Profile{{skillserver.ProfileSEP2640}, nil}

// TestFastPathStatelessMatchesSDK is TestFastPathMatchesSDK for the
// clients of a stateless server (`serve --stateless`, replicas behind a
// load balancer): every golden request, of every protocol revision a
// client sends, under each set of profiles, gets the same status, headers
// and bytes from a server with the thin read path as from go-sdk's, and
// the thin path answers the requests it is meant for. On 2026-07-28, the
// capability sets real clients declare (go-sdk's default client declares
// roots) are answered too, and odd ones left to go-sdk or answered alike.
func TestFastPathStatelessMatchesSDK(t *testing.T) {
	for _, profiles := range statelessProfileSets {
		tw := newTwinHTTP(t, skillserver.Options{TTL: 5 * time.Minute, PageSize: 2, Profiles: profiles}, true)
		compare := func(t *testing.T, name string, h http.Header, body string) (exchange, bool) {
			t.Helper()
			before := skillserver.FastServed(tw.fastSrv)
			f := rawPost(t, tw.fast, h, body)
			served := skillserver.FastServed(tw.fastSrv) > before
			if s := rawPost(t, tw.slow, h, body); f != s {
				t.Errorf("%s: the thin path answers\n%d %s\n%s\ngo-sdk answers\n%d %s\n%s", name, f.status, f.header, f.body, s.status, s.header, s.body)
			}
			return f, served
		}
		t.Run(fmt.Sprintf("profiles=%v/older", profiles), func(t *testing.T) {
			// "" is a client that sends no MCP-Protocol-Version header.
			for _, version := range []string{"2025-11-25", "2025-06-18", "2025-03-26", ""} {
				h := headers("MCP-Protocol-Version", version)
				for _, c := range goldenCalls {
					ex, served := compare(t, version+" "+c.name, h, request("9", c.method, c.params))
					if want := thinPathFor(c.name, c.method, ex); served != want {
						t.Errorf("%s %q: thin path answered: %v, want %v", c.name, version, served, want)
					}
				}
				for _, list := range []struct{ method, params string }{
					{wire.MethodListSkills, `{`},
					{wire.MethodReadDirectory, `{"uri":"skill://pdf-processing",`},
				} {
					pageAll(t, list.method, list.params, func(body string) exchange {
						ex, _ := compare(t, "page", h, request("3", list.method, body))
						return ex
					})
				}
				read := `{"uri":"skill://git-workflow/SKILL.md"}`
				for _, v := range []struct {
					name   string
					header []string
					body   string
				}{
					{"session id", []string{"Mcp-Session-Id", "abc"}, request("1", "resources/read", read)},
					{"progress token", nil, request("1", "resources/read", `{"_meta":{"progressToken":1},"uri":"skill://git-workflow/SKILL.md"}`)},
					{"modern _meta", nil, request("1", "skills/list", withMeta(`{}`, true))},
					{"unknown version", []string{"MCP-Protocol-Version", "2024-01-01"}, request("1", "resources/read", read)},
					{"Accept JSON only", []string{"Accept", "application/json"}, request("1", "resources/read", read)},
					{"Content-Type text", []string{"Content-Type", "text/plain"}, request("1", "resources/read", read)},
					{"string id", nil, request(`"x"`, "resources/read", read)},
					{"notification", nil, `{"jsonrpc":"2.0","method":"resources/read","params":` + read + `}`},
					{"initialize", nil, request("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)},
				} {
					hv := headers(append([]string{"MCP-Protocol-Version", version}, v.header...)...)
					compare(t, version+" "+v.name, hv, v.body)
				}
			}
		})
		t.Run(fmt.Sprintf("profiles=%v/capabilities", profiles), func(t *testing.T) {
			for _, cs := range []struct {
				name, caps, info string
				thin             bool // the thin path must answer
			}{
				{"go-sdk default client", `{"roots":{"listChanged":true}}`, `{"name":"c","version":"1"}`, true},
				{"roots and extension", `{"roots":{"listChanged":true},"extensions":{"` + wire.ExtensionID + `":{}}}`, `{"name":"c","version":"1"}`, true},
				{"everything", `{"experimental":{"x":{}},"sampling":{"tools":{}},"elicitation":{"form":{},"url":{}},"extensions":{"` + wire.ExtensionID + `":{},"other/x":{"a":1}}}`, `{"name":"c","version":"1","title":"C","websiteUrl":"https://example.com"}`, true},
				{"none", `{}`, `{"name":"c","version":"1"}`, true},
				{"no client info", `{"roots":{}}`, ``, true},
				{"unknown capability", `{"future":{"x":1}}`, `{"name":"c"}`, true},
				{"null capabilities", `null`, `{"name":"c"}`, false},
				{"capabilities not an object", `5`, `{"name":"c"}`, false},
				{"roots mistyped", `{"roots":{"listChanged":"yes"}}`, `{"name":"c"}`, false},
				{"Extensions by case", `{"Extensions":{"` + wire.ExtensionID + `":{}}}`, `{"name":"c"}`, false},
				{"extensions not an object", `{"extensions":[1]}`, `{"name":"c"}`, false},
				{"client info mistyped", `{}`, `{"name":5}`, false},
				{"client info null", `{}`, `null`, false},
			} {
				meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + cs.caps
				if cs.info != "" {
					meta += `,"io.modelcontextprotocol/clientInfo":` + cs.info
				}
				meta += `}`
				for _, c := range goldenCalls {
					uri := ""
					if i := strings.Index(c.params, `"uri":"`); i >= 0 {
						uri = strings.SplitN(c.params[i+7:], `"`, 2)[0]
					}
					params := `{"_meta":` + meta + `}`
					if c.params != "" && c.params != "{}" {
						params = `{"_meta":` + meta + `,` + c.params[1:]
					}
					h := headers("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", c.method, "Mcp-Name", uri)
					ex, served := compare(t, cs.name+" "+c.name, h, request("7", c.method, params))
					if want := cs.thin && thinPathFor(c.name, c.method, ex); served != want {
						t.Errorf("%s, %s: thin path answered: %v, want %v", cs.name, c.name, served, want)
					}
				}
			}
		})
	}
}

// TestFastPathBodyBehindEndpoint: behind package endpoint, which hands
// the handler the body it read (one read per request), a body within the
// endpoint's limit but beyond go-sdk's still reaches go-sdk whole and gets
// its answer, with the thin path on as off; and a read the thin path
// serves is answered alike.
func TestFastPathBodyBehindEndpoint(t *testing.T) {
	var urls [2]string
	twins(t, skillserver.Options{}, func(noFast bool, s *mcp.Server, srv *skillserver.Server) {
		h := srv.HTTPHandler(&skillserver.HTTPOptions{Logger: discard})
		t.Cleanup(func() { h.Close() })
		ep, err := endpoint.New(h, &endpoint.Options{MaxBodyBytes: 8 << 20, Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		if noFast {
			i = 1
		}
		urls[i] = mount(t, ep).url
	})
	hd := headers("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read", "Mcp-Name", "skill://git-workflow/SKILL.md")
	for _, body := range []string{
		request("1", "resources/read", `{"uri":"skill://git-workflow/SKILL.md","pad":"`+strings.Repeat("x", 5<<20)+`"}`),
		request("1", "resources/read", withMeta(`{"uri":"skill://git-workflow/SKILL.md"}`, true)),
	} {
		f, s := rawPost(t, urls[0], hd, body), rawPost(t, urls[1], hd, body)
		if f != s {
			t.Errorf("%.80s…: thin path %d %.300s, go-sdk %d %.300s", body, f.status, f.body, s.status, s.body)
		}
	}
}
