//go:build !skillport_no_index && !skillport_no_sep2076 && !skillport_no_seed001

package skillserver_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

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

// TestOneProfileRemoved unregisters the index profile alone, as deleting
// profile_index.go and its registration line would: the other profiles
// answer as before and the index is not served.
func TestOneProfileRemoved(t *testing.T) {
	var f *fixture
	skillserver.WithoutProfile(skillserver.ProfileIndex, func() {
		f = newFixture(t, legacyFiles(), &skillserver.Options{TTL: -1,
			Profiles: []skillserver.Profile{skillserver.ProfileSEP2640, skillserver.ProfileSEP2076, skillserver.ProfileSeed001}})
	})
	c := connectRaw(t, f.MCP, "")
	get[wire.GetByNameResult](c, "skills/get", map[string]any{"name": "report", "arguments": map[string]any{"topic": "q"}})
	get[wire.ReadResult](c, wire.MethodReadSkill, map[string]any{"name": "report"})
	wantError(t, c, "resources/read", map[string]any{"uri": wire.IndexURI}, -32602, "uri")
	for _, r := range get[struct {
		Resources []struct{ URI string } `json:"resources"`
	}](c, "resources/list", map[string]any{}).Resources {
		if r.URI == wire.IndexURI {
			t.Error("resources/list lists the index of the removed profile")
		}
	}
}

// connectWith connects a raw client through transport t (nil: a plain
// IOTransport) declaring the given client capabilities.
func connectWith(t testing.TB, s *mcp.Server, wrap func(mcp.Transport) mcp.Transport, caps map[string]any) *rawClient {
	t.Helper()
	return dialRaw(t, s, wrap, caps, "")
}

var declaring = map[string]any{"extensions": map[string]any{wire.ExtensionID: map[string]any{}}}
