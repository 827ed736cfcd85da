package skillserver_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// TestCoreWithoutProfiles builds a server with the compatibility profiles'
// hook unregistered, as if their files were deleted: the extension core
// answers every one of its methods exactly as a server told to serve the
// extension alone does, and the legacy methods are unknown.
func TestCoreWithoutProfiles(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	var bare *fixture
	skillserver.WithoutProfiles(func() {
		bare = newFixture(t, legacyFiles(), &skillserver.Options{TTL: -1, PageSize: 2, CursorKey: key})
	})
	alone := newFixture(t, legacyFiles(), &skillserver.Options{TTL: -1, PageSize: 2, CursorKey: key,
		Profiles: []skillserver.Profile{skillserver.ProfileSEP2640}})
	b, a := connectRaw(t, bare.MCP, ""), connectRaw(t, alone.MCP, "")

	if !bytes.Equal(b.init, a.init) {
		t.Errorf("initialize without the profiles:\n%s\nwith the extension alone:\n%s", b.init, a.init)
	}
	var init struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	json.Unmarshal(b.init, &init)
	if _, ok := init.Capabilities["skills"]; ok {
		t.Errorf("the core declares the legacy skills capability: %s", b.init)
	}

	calls := []struct {
		method string
		params map[string]any
	}{
		{"skills/list", map[string]any{}},
		{"skills/get", map[string]any{"uri": "skill://report/SKILL.md"}},
		{"resources/directory/read", map[string]any{"uri": "skill://report"}},
		{"resources/read", map[string]any{"uri": "skill://report/references/guide.md"}},
		{"resources/list", map[string]any{}},
	}
	for _, c := range calls {
		got, gerr, graw := b.call(c.method, c.params)
		want, werr, _ := a.call(c.method, c.params)
		if gerr != nil || werr != nil {
			t.Errorf("%s: without the profiles %+v, alone %+v", c.method, gerr, werr)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s without the profiles:\n%s\nwith the extension alone:\n%s", c.method, graw, want)
		}
	}
	for _, m := range []string{wire.MethodReadSkill, wire.MethodReadReference, wire.MethodExecute} {
		wantError(t, b, m, map[string]any{"name": "report", "reference": "references/guide.md", "script": "scripts/run.sh"}, -32601, "")
	}
	wantError(t, b, "skills/get", map[string]any{"name": "report"}, -32602, "")
	wantError(t, b, "resources/read", map[string]any{"uri": wire.IndexURI}, -32602, "uri")
}
