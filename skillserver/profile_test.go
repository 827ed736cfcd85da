package skillserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/sandbox"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// connectWith connects a raw client through transport t (nil: a plain
// IOTransport) declaring the given client capabilities.
func connectWith(t testing.TB, s *mcp.Server, wrap func(mcp.Transport) mcp.Transport, caps map[string]any) *rawClient {
	t.Helper()
	c1, c2 := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var tr mcp.Transport = &mcp.IOTransport{Reader: c2, Writer: c2}
	if wrap != nil {
		tr = wrap(tr)
	}
	ss, err := s.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); c1.Close(); ss.Close() })
	c := &rawClient{t: t, conn: c1, r: bufio.NewReaderSize(c1, 1<<20)}
	res, rerr, _ := c.call("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "raw", "version": "0"},
	})
	if rerr != nil {
		t.Fatalf("initialize: %+v", rerr)
	}
	c.init = res
	c.notify("notifications/initialized", map[string]any{})
	return c
}

var declaring = map[string]any{"extensions": map[string]any{wire.ExtensionID: map[string]any{}}}

// legacyFiles is a tree for the by-name methods: a required argument, two
// skills with one name, and a secret outside the skill.
func legacyFiles() map[string]string {
	return map[string]string{
		"report/SKILL.md":             "---\nname: report\ndescription: Write a report.\narguments:\n  - name: topic\n    required: true\n  - name: tone\n    description: formal or casual\ndependencies:\n  tools: [read_pdf, write_pdf]\n  prompts: [summarize]\n---\nWrite a {{ topic }} report in a {{tone}} tone. Keep {{other}} as written.\n",
		"report/references/guide.md":  "# Guide\n",
		"report/scripts/run.sh":       "echo hi\n",
		"team-a/dup/SKILL.md":         skillMD("dup", "First dup."),
		"team-b/dup/SKILL.md":         skillMD("dup", "Second dup."),
		"team-b/dup/references/x.txt": "x",
	}
}

func wantError(t *testing.T, c *rawClient, method string, params any, code int, dataKey string) *rpcError {
	t.Helper()
	_, rerr, raw := c.call(method, params)
	if rerr == nil {
		t.Fatalf("%s %v: no error: %s", method, params, raw)
	}
	if rerr.Code != code {
		t.Fatalf("%s %v: code %d (%s), want %d", method, params, rerr.Code, rerr.Message, code)
	}
	if dataKey != "" {
		var d map[string]any
		json.Unmarshal(rerr.Data, &d)
		if _, ok := d[dataKey]; !ok {
			t.Errorf("%s %v: error data %s lacks %q", method, params, rerr.Data, dataKey)
		}
	}
	return rerr
}

// TestProfileErrors covers the by-name methods' bad input.
func TestProfileErrors(t *testing.T) {
	f := newFixture(t, legacyFiles(), nil)
	c := connectRaw(t, f.MCP, "")
	cases := []struct {
		name     string
		method   string
		params   any
		code     int
		dataKey  string
		contains string
	}{
		{"get both", "skills/get", map[string]any{"uri": "skill://report/SKILL.md", "name": "report"}, -32602, "uri", "not both"},
		{"get neither", "skills/get", map[string]any{}, -32602, "", "name"},
		{"get unknown name", "skills/get", map[string]any{"name": "nope"}, -32602, "name", "skills/list"},
		{"get ambiguous", "skills/get", map[string]any{"name": "dup"}, -32602, "candidates", "candidates"},
		{"get missing required", "skills/get", map[string]any{"name": "report"}, -32602, "missing", "topic"},
		{"get undeclared argument", "skills/get", map[string]any{"name": "report", "arguments": map[string]any{"topic": "x", "colour": "red"}}, -32602, "name", "colour"},
		{"get argument not a string", "skills/get", map[string]any{"name": "report", "arguments": map[string]any{"topic": []any{1}}}, -32602, "name", "string"},
		{"get the index", "skills/get", map[string]any{"uri": wire.IndexURI}, -32602, "uri", "index"},
		{"read unknown", "skills/read", map[string]any{"name": "nope"}, -32602, "name", "nope"},
		{"read empty", "skills/read", map[string]any{}, -32602, "name", "missing"},
		{"read ambiguous", "skills/read", map[string]any{"name": "dup"}, -32602, "candidates", ""},
		{"reference unknown", "skills/read_reference", map[string]any{"name": "report", "reference": "nope.md"}, -32602, "reference", ""},
		{"reference traversal", "skills/read_reference", map[string]any{"name": "report", "reference": "../../canary.txt"}, -32602, "reference", ""},
		{"reference dot segment", "skills/read_reference", map[string]any{"name": "report", "reference": "references/../../secret/SKILL.md"}, -32602, "reference", ""},
		{"reference absolute", "skills/read_reference", map[string]any{"name": "report", "reference": "/etc/passwd"}, -32602, "reference", ""},
		{"reference backslash", "skills/read_reference", map[string]any{"name": "report", "reference": "..\\..\\canary.txt"}, -32602, "reference", ""},
		{"reference of another skill", "skills/read_reference", map[string]any{"name": "report", "reference": "x.txt"}, -32602, "reference", ""},
		{"execute disabled", "skills/execute", map[string]any{"name": "report", "script": "run.sh"}, -32003, "reason", "--allow-scripts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := wantError(t, c, tc.method, tc.params, tc.code, tc.dataKey)
			if !strings.Contains(e.Message, tc.contains) {
				t.Errorf("message %q does not mention %q", e.Message, tc.contains)
			}
			// The request is echoed as received; nothing about the disk is.
			for _, leak := range []string{f.Root, f.Dir, canary} {
				if strings.Contains(e.Message, leak) || strings.Contains(string(e.Data), leak) {
					t.Errorf("error leaks %q: %s %s", leak, e.Message, e.Data)
				}
			}
		})
	}

	t.Run("ambiguous candidates", func(t *testing.T) {
		e := wantError(t, c, "skills/get", map[string]any{"name": "dup"}, -32602, "candidates")
		var d struct{ Candidates []string }
		json.Unmarshal(e.Data, &d)
		want := []string{"skill://team-a/dup/SKILL.md", "skill://team-b/dup/SKILL.md"}
		if !slices.Equal(d.Candidates, want) {
			t.Errorf("candidates %v, want %v", d.Candidates, want)
		}
	})

	// Issue 27.14: with seed001 alone there is no skills/get to point at.
	t.Run("ambiguous under seed001 alone", func(t *testing.T) {
		f := newFixture(t, legacyFiles(), &skillserver.Options{TTL: -1, Profiles: []skillserver.Profile{skillserver.ProfileSeed001}})
		c := connectRaw(t, f.MCP, "")
		e := wantError(t, c, "skills/read", map[string]any{"name": "dup"}, -32602, "candidates")
		if strings.Contains(e.Message, "use skills/get") || !strings.Contains(e.Message, "sep2640") {
			t.Errorf("the error points at a method this server does not serve, or not at the fix: %s", e.Message)
		}
	})

	t.Run("legacy error codes", func(t *testing.T) {
		f := newFixture(t, legacyFiles(), &skillserver.Options{TTL: -1, LegacyErrorCodes: true})
		c := connectRaw(t, f.MCP, "")
		wantError(t, c, "skills/read", map[string]any{"name": "nope"}, wire.CodeSkillNotFound, "name")
		wantError(t, c, "skills/read_reference", map[string]any{"name": "report", "reference": "../x"}, wire.CodeReferenceNotFound, "reference")
		// SEP-2076 keeps its own -32602 whatever the option.
		wantError(t, c, "skills/get", map[string]any{"name": "nope"}, -32602, "name")
	})

	t.Run("profile off", func(t *testing.T) {
		f := newFixture(t, legacyFiles(), &skillserver.Options{TTL: -1, Profiles: []skillserver.Profile{skillserver.ProfileSEP2640}})
		c := connectRaw(t, f.MCP, "")
		wantError(t, c, "skills/read", map[string]any{"name": "report"}, -32601, "")
		wantError(t, c, "skills/get", map[string]any{"name": "report"}, -32602, "name")
		wantError(t, c, "resources/read", map[string]any{"uri": wire.IndexURI}, -32602, "uri")
		var init map[string]map[string]any
		json.Unmarshal(c.init, &init)
		if _, ok := init["capabilities"]["skills"]; ok {
			t.Errorf("sep2640 alone declares the legacy skills capability: %s", c.init)
		}
	})
}

// TestSkillsGetByName covers SEP-2076 skills/get: argument substitution,
// dependencies, files.
func TestSkillsGetByName(t *testing.T) {
	f := newFixture(t, legacyFiles(), nil)
	c := connectRaw(t, f.MCP, "")
	res := get[wire.GetByNameResult](c, "skills/get", map[string]any{"name": "report", "arguments": map[string]any{"topic": "quarterly"}})
	if want := "Write a quarterly report in a  tone. Keep {{other}} as written.\n"; res.Instructions != want {
		t.Errorf("instructions %q, want %q", res.Instructions, want)
	}
	res = get[wire.GetByNameResult](c, "skills/get", map[string]any{"name": "report", "arguments": map[string]any{"topic": "quarterly", "tone": "formal"}})
	if want := "Write a quarterly report in a formal tone. Keep {{other}} as written.\n"; res.Instructions != want {
		t.Errorf("instructions %q, want %q", res.Instructions, want)
	}
	if res.Dependencies == nil || !slices.Equal(res.Dependencies.Tools, []string{"read_pdf", "write_pdf"}) || len(res.Dependencies.Prompts) != 1 || res.Dependencies.Prompts[0] != (wire.PromptReference{Type: "ref/prompt", Name: "summarize"}) {
		t.Errorf("dependencies %+v", res.Dependencies)
	}
	var uris []string
	for _, fl := range res.Files {
		uris = append(uris, fl.URI)
		// files[] URIs are the stable ones, readable with resources/read.
		get[map[string]any](c, "resources/read", map[string]any{"uri": fl.URI})
	}
	if want := []string{"skill://report/references/guide.md", "skill://report/scripts/run.sh"}; !slices.Equal(uris, want) {
		t.Errorf("files %v, want %v", uris, want)
	}
	// Instructions come from the same bytes the SEP-2640 path serves.
	rr := get[readResult](c, "resources/read", map[string]any{"uri": "skill://report/SKILL.md"})
	if !strings.HasSuffix(string(rr.bytes(t)), "---\nWrite a {{ topic }} report in a {{tone}} tone. Keep {{other}} as written.\n") {
		t.Errorf("SKILL.md served as %q", rr.bytes(t))
	}
}

// TestSkillsListShapes: a client that declared the extension gets pure
// SEP-2640 entries; any other client the superset.
func TestSkillsListShapes(t *testing.T) {
	f := newFixture(t, legacyFiles(), nil)
	entries := func(c *rawClient) []map[string]any {
		res := get[struct {
			Skills     []map[string]any `json:"skills"`
			ResultType string           `json:"resultType"`
		}](c, "skills/list", map[string]any{})
		if res.ResultType != "complete" {
			t.Errorf("resultType %q", res.ResultType)
		}
		return res.Skills
	}
	for _, e := range entries(connectWith(t, f.MCP, nil, declaring)) {
		keys := slices.Sorted(mapsKeys(e))
		if !slices.Equal(keys, []string{"frontmatter", "resources", "uri"}) {
			t.Errorf("declaring client got entry keys %v", keys)
		}
	}
	legacy := entries(connectRaw(t, f.MCP, ""))
	if len(legacy) != 3 {
		t.Fatalf("%d entries", len(legacy))
	}
	for _, e := range legacy {
		for _, k := range []string{"uri", "frontmatter", "resources", "name", "description"} {
			if _, ok := e[k]; !ok {
				t.Errorf("superset entry lacks %s: %v", k, e)
			}
		}
	}
	if args, _ := legacy[0]["arguments"].([]any); len(args) != 2 || legacy[0]["dependencies"] == nil {
		t.Errorf("report entry: %v", legacy[0])
	}

	t.Run("without sep2640", func(t *testing.T) {
		f := newFixture(t, legacyFiles(), &skillserver.Options{TTL: -1, Profiles: []skillserver.Profile{skillserver.ProfileSEP2076}})
		c := connectRaw(t, f.MCP, "")
		res, rerr, raw := c.call("skills/list", map[string]any{})
		if rerr != nil {
			t.Fatal(rerr.Message)
		}
		var m map[string]any
		json.Unmarshal(res, &m)
		if _, ok := m["resultType"]; ok || strings.Contains(string(res), `"uri"`) {
			t.Errorf("SEP-2076 only still sends SEP-2640 fields: %s", raw)
		}
		var init map[string]map[string]any
		json.Unmarshal(c.init, &init)
		if _, ok := init["capabilities"]["extensions"]; ok {
			t.Errorf("extension declared without the sep2640 profile: %s", c.init)
		}
		wantError(t, c, "skills/get", map[string]any{"uri": "skill://report/SKILL.md"}, -32602, "uri")
		wantError(t, c, "resources/directory/read", map[string]any{"uri": "skill://report"}, -32601, "")
	})
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestIndexResource covers skill://index.json.
func TestIndexResource(t *testing.T) {
	f := newFixture(t, legacyFiles(), nil)
	c := connectRaw(t, f.MCP, "")
	rr := get[readResult](c, "resources/read", map[string]any{"uri": wire.IndexURI})
	if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "application/json" || rr.Contents[0].URI != wire.IndexURI {
		t.Fatalf("index read: %+v", rr)
	}
	var ix wire.Index
	if err := json.Unmarshal(rr.bytes(t), &ix); err != nil {
		t.Fatal(err)
	}
	if ix.Schema != wire.IndexSchema || len(ix.Skills) != 3 {
		t.Fatalf("index %+v", ix)
	}
	snap := f.Src.Snapshot()
	for i, sk := range snap.Skills() {
		e := ix.Skills[i]
		if e.Name != sk.Name || e.Type != "skill-md" || e.URL != sk.URI || e.Digest != snap.File(sk.URI).Digest || e.Description != sk.Frontmatter.Description() || string(e.Frontmatter) != string(sk.Frontmatter.JSON()) {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	res := get[mcp.ListResourcesResult](c, "resources/list", map[string]any{})
	if len(res.Resources) == 0 || res.Resources[0].URI != wire.IndexURI {
		t.Errorf("resources/list does not start with the index")
	}
	list := get[wire.ListSkillsResult](c, "skills/list", map[string]any{})
	for _, e := range list.Skills {
		if e.URI == wire.IndexURI {
			t.Errorf("the index is a skills/list entry")
		}
	}
	wantError(t, c, "resources/directory/read", map[string]any{"uri": wire.IndexURI}, -32602, "uri")
}

// TestLegacyListChanged: sessions that spoke a legacy profile get
// notifications/skills/list_changed when the skills change; a SEP-2640
// session does not.
//
// In a synctest bubble (the sessions run over net.Pipe, in process): once
// every goroutine waits, each notification due has been written, so the
// absence of one is read after synctest.Wait, not after a wall-clock sleep.
func TestLegacyListChanged(t *testing.T) {
	synctest.Test(t, testLegacyListChanged)
}

func testLegacyListChanged(t *testing.T) {
	f := newFixture(t, legacyFiles(), &skillserver.Options{TTL: -1, ListChangedDelay: 20 * time.Millisecond})
	legacy := connectWith(t, f.MCP, f.Skills.Transport, map[string]any{})
	stable := connectWith(t, f.MCP, f.Skills.Transport, declaring)
	get[wire.ReadResult](legacy, "skills/read", map[string]any{"name": "report"})
	get[wire.ListSkillsResult](stable, "skills/list", map[string]any{})
	writeTree(t, f.Dir, map[string]string{"fresh/SKILL.md": skillMD("fresh", "A new skill.")})
	f.reload(t)
	legacy.waitNote(wire.NotificationSkillsList, 5*time.Second)
	stable.waitNote("notifications/resources/list_changed", 5*time.Second)
	time.Sleep(time.Minute) // past every debounce and ListChangedDelay timer: fake time, in the bubble
	synctest.Wait()
	stable.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	for {
		line, err := stable.r.ReadBytes('\n')
		if err != nil {
			break
		}
		if strings.Contains(string(line), wire.NotificationSkillsList) {
			t.Errorf("a SEP-2640 session got %s", line)
		}
	}
}

// TestChangeNotesNotHeldByStuckClient: a client that stops reading its
// connection does not hold up change notifications to the other sessions.
// Sessions are notified one after another, and a write to a client that
// reads nothing blocks; the stuck session is connected first, so that it
// is notified first.
func TestChangeNotesNotHeldByStuckClient(t *testing.T) {
	for _, delay := range []time.Duration{time.Nanosecond, 20 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			f := newFixture(t, legacyFiles(), &skillserver.Options{TTL: -1, ListChangedDelay: delay})
			stuck := connectWith(t, f.MCP, f.Skills.Transport, map[string]any{})
			get[wire.ReadResult](stuck, "skills/read", map[string]any{"name": "report"})
			legacy := connectWith(t, f.MCP, f.Skills.Transport, map[string]any{})
			get[wire.ReadResult](legacy, "skills/read", map[string]any{"name": "report"})
			stable := connectWith(t, f.MCP, f.Skills.Transport, declaring)
			get[wire.ListSkillsResult](stable, "skills/list", map[string]any{})
			for i := range 3 {
				writeTree(t, f.Dir, map[string]string{"fresh/SKILL.md": skillMD("fresh", fmt.Sprintf("Version %d.", i))})
				f.reload(t)
				// Well under go-sdk's ten seconds per stuck write.
				legacy.waitNote(wire.NotificationSkillsList, 3*time.Second)
				legacy.waitNote("notifications/resources/list_changed", 3*time.Second)
				stable.waitNote("notifications/resources/list_changed", 3*time.Second)
			}
			// However many changes, the stuck client is owed one copy of
			// each notification.
			if n := skillserver.PendingNotes(f.Skills); n > 2 {
				t.Errorf("%d notifications pending for a stuck client, want at most 2 (one per kind)", n)
			}
		})
	}
}

// TestCheckDependencies: attached to an application's server, dangling
// tool and prompt dependencies are diagnostics.
func TestCheckDependencies(t *testing.T) {
	dir := writeTree(t, t.TempDir(), legacyFiles())
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "app"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "read_pdf"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	sk, err := skillserver.Attach(s, published.NewCatalogSource(cat), &skillserver.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	diags, err := sk.CheckDependencies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range diags {
		got = append(got, d.Kind+":"+d.Name)
		if d.Skill != "skill://report/SKILL.md" || !strings.Contains(d.Message, d.Name) {
			t.Errorf("diagnostic %+v", d)
		}
	}
	if want := []string{"tool:write_pdf", "prompt:summarize"}; !slices.Equal(got, want) {
		t.Errorf("dangling %v, want %v", got, want)
	}
	if len(sk.Diagnostics()) != 2 {
		t.Errorf("Diagnostics() = %v", sk.Diagnostics())
	}
	s.AddPrompt(&mcp.Prompt{Name: "summarize"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil })
	mcp.AddTool(s, &mcp.Tool{Name: "write_pdf"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	if diags, _ := sk.CheckDependencies(context.Background()); len(diags) != 0 {
		t.Errorf("after registering them: %v", diags)
	}
}

// TestExecute runs skills/execute end to end through the server and the
// bubblewrap sandbox.
func TestExecute(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HOST-LISTENER-REACHED\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	files := map[string]string{
		"tool/SKILL.md": skillMD("tool", "Run scripts."),
		"tool/scripts/net.py": fmt.Sprintf(`import socket, sys
for host in ("127.0.0.1", "1.1.1.1"):
    try:
        s = socket.create_connection((host, %d if host == "127.0.0.1" else 53), timeout=2)
        print("CONNECTED", host, s.recv(100))
    except OSError as e:
        print("blocked", host, type(e).__name__)
`, port),
		"tool/scripts/echo.py":  "import json, sys\nargs = json.load(sys.stdin)\nprint('hello', args['who'])\nopen('out.txt', 'w').write('made by ' + args['who'])\n",
		"tool/scripts/fail.sh":  "echo oops >&2\nexit 3\n",
		"tool/scripts/sleep.sh": "sleep 30\n",
		"tool/scripts/env.sh":   "env; cat /root/.profile 2>&1; ls /home 2>&1\n",
		"tool/references/x.sh":  "echo not a script\n",
	}
	os.Setenv("SKILLPORT_TEST_SECRET", "SECRET-VALUE-1234")
	defer os.Unsetenv("SKILLPORT_TEST_SECRET")
	runner := newRunner(t)
	f := newFixture(t, files, &skillserver.Options{TTL: -1, Scripts: runner, Logger: discard})
	c := connectRaw(t, f.MCP, "")

	var init map[string]map[string]any
	json.Unmarshal(c.init, &init)
	if sk, _ := init["capabilities"]["skills"].(map[string]any); sk["scripts"] != true {
		t.Errorf("capabilities.skills = %v, want scripts: true", init["capabilities"]["skills"])
	}

	text := func(r wire.ExecuteResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			b.WriteString(c.Text)
		}
		return b.String()
	}
	t.Run("output and files", func(t *testing.T) {
		r := get[wire.ExecuteResult](c, "skills/execute", map[string]any{"name": "tool", "script": "echo", "arguments": map[string]any{"who": "tester"}})
		if r.IsError || !strings.Contains(text(r), "hello tester") {
			t.Fatalf("result %+v", r)
		}
		var out *wire.OutputResource
		for _, it := range r.Content {
			if it.Type == "resource" {
				out = it.Resource
			}
		}
		if out == nil || out.Text == nil || *out.Text != "made by tester" || !strings.HasPrefix(out.URI, "skill-run://") || !strings.HasSuffix(out.URI, "/out.txt") {
			t.Errorf("output resource %+v", out)
		}
	})
	t.Run("no network", func(t *testing.T) {
		r := get[wire.ExecuteResult](c, "skills/execute", map[string]any{"name": "tool", "script": "scripts/net.py"})
		out := text(r)
		if strings.Contains(out, "CONNECTED") || strings.Contains(out, "HOST-LISTENER") || !strings.Contains(out, "blocked 127.0.0.1") || !strings.Contains(out, "blocked 1.1.1.1") {
			t.Errorf("network probe: %s", out)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		r := get[wire.ExecuteResult](c, "skills/execute", map[string]any{"name": "tool", "script": "env.sh"})
		if out := text(r); strings.Contains(out, "SECRET-VALUE") || strings.Contains(out, "SKILLPORT_TEST_SECRET") {
			t.Errorf("the script saw the server's environment: %s", out)
		}
	})
	t.Run("non-zero exit", func(t *testing.T) {
		r := get[wire.ExecuteResult](c, "skills/execute", map[string]any{"name": "tool", "script": "fail.sh"})
		if !r.IsError || !strings.Contains(text(r), "oops") || !strings.Contains(text(r), "exit status 3") {
			t.Errorf("result %+v", r)
		}
	})
	t.Run("limit", func(t *testing.T) {
		slow, err := sandbox.New(&sandbox.Options{Logger: discard, Limits: sandbox.Limits{WallClock: 2 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, files, &skillserver.Options{TTL: -1, Scripts: slow})
		c := connectRaw(t, f.MCP, "")
		e := wantError(t, c, "skills/execute", map[string]any{"name": "tool", "script": "sleep.sh"}, wire.CodeScriptFailed, "reason")
		if !strings.Contains(string(e.Data), "timeout") {
			t.Errorf("data %s", e.Data)
		}
	})
	t.Run("busy", func(t *testing.T) {
		one, err := sandbox.New(&sandbox.Options{Logger: discard, MaxRuns: 1})
		if err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, files, &skillserver.Options{TTL: -1, Scripts: one})
		c := connectRaw(t, f.MCP, "")
		// Another run holds the only slot until cancelled.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				_, err := one.Run(ctx, sandbox.Spec{SkillDir: filepath.Join(f.Dir, "tool"), Script: "scripts/sleep.sh"})
				if !errors.Is(err, sandbox.ErrBusy) { // the probe below held the slot
					return
				}
			}
		}()
		defer func() { cancel(); <-done }()
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			_, err := one.Run(context.Background(), sandbox.Spec{SkillDir: filepath.Join(f.Dir, "tool"), Script: "scripts/fail.sh"})
			if errors.Is(err, sandbox.ErrBusy) {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatal("the first run never took the slot")
			}
		}
		e := wantError(t, c, "skills/execute", map[string]any{"name": "tool", "script": "echo"}, wire.CodeScriptFailed, "reason")
		if !strings.Contains(string(e.Data), "busy") {
			t.Errorf("data %s", e.Data)
		}
	})
	for _, bad := range []string{"x.sh", "references/x.sh", "../tool/scripts/fail.sh", "scripts/../references/x.sh", "/bin/sh", "nope"} {
		t.Run("refused "+bad, func(t *testing.T) {
			wantError(t, c, "skills/execute", map[string]any{"name": "tool", "script": bad}, -32602, "script")
		})
	}
	wantError(t, c, "skills/execute", map[string]any{"name": "nope", "script": "echo"}, -32602, "name")
	// Nothing was ever written into the served tree.
	if _, err := os.Stat(filepath.Join(f.Dir, "tool", "scripts", "out.txt")); err == nil {
		t.Errorf("a script wrote into the skill directory")
	}
}

// TestInstructionsNameOnlyEnabledProfiles checks that the server's
// instructions point a client at methods the operator left on, and never
// at the Skills Extension when it is off.
func TestInstructionsNameOnlyEnabledProfiles(t *testing.T) {
	cases := []struct {
		profiles   []skillserver.Profile
		want, deny []string
	}{
		{[]skillserver.Profile{skillserver.ProfileSEP2640}, []string{wire.ExtensionID, "resources/read"}, []string{"skills/read", wire.IndexURI}},
		{[]skillserver.Profile{skillserver.ProfileSeed001}, []string{"skills/read", "skills/read_reference"}, []string{wire.ExtensionID, "resources/read"}},
		{[]skillserver.Profile{skillserver.ProfileSEP2076}, []string{"skills/get {name}"}, []string{wire.ExtensionID, "skills/read"}},
		{[]skillserver.Profile{skillserver.ProfileIndex}, []string{wire.IndexURI}, []string{wire.ExtensionID, "skills/list"}},
	}
	for _, tc := range cases {
		t.Run(string(tc.profiles[0]), func(t *testing.T) {
			s, _, _ := profileServer(t, skillserver.Options{Profiles: tc.profiles})
			c := connectWith(t, s, nil, nil)
			var init struct {
				Instructions string `json:"instructions"`
			}
			if err := json.Unmarshal(c.init, &init); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(init.Instructions, "3 Agent skills") {
				t.Errorf("instructions %q do not say how many skills are served", init.Instructions)
			}
			for _, w := range tc.want {
				if !strings.Contains(init.Instructions, w) {
					t.Errorf("instructions %q lack %q", init.Instructions, w)
				}
			}
			for _, d := range tc.deny {
				if strings.Contains(init.Instructions, d) {
					t.Errorf("instructions %q mention %q, which this server does not serve", init.Instructions, d)
				}
			}
		})
	}
}

// TestAddCapability checks the splice of the legacy "skills" capability
// into initialize and server/discover results of every shape.
func TestAddCapability(t *testing.T) {
	c := wire.LegacyCapability{ListChanged: true}
	for _, tc := range []struct{ in, want string }{
		{`{"protocolVersion":"x","capabilities":{"resources":{}},"serverInfo":{"name":"s"}}`, `{"protocolVersion":"x","capabilities":{"resources":{},"skills":{"listChanged":true}},"serverInfo":{"name":"s"}}`},
		{`{"capabilities":{"skills":{"old":1},"tools":{}}}`, `{"capabilities":{"tools":{},"skills":{"listChanged":true}}}`},
		{`{"capabilities":null,"a":1}`, `{"a":1,"capabilities":{"skills":{"listChanged":true}}}`},
		{`{"a":1}`, `{"a":1,"capabilities":{"skills":{"listChanged":true}}}`},
		{`{}`, `{"capabilities":{"skills":{"listChanged":true}}}`},
		{`{"capabilities":{}}`, `{"capabilities":{"skills":{"listChanged":true}}}`},
	} {
		got, err := skillserver.AddCapability(json.RawMessage(tc.in), c)
		if err != nil || string(got) != tc.want {
			t.Errorf("AddCapability(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
