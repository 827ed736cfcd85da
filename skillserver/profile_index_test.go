//go:build !skillport_no_index

package skillserver_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skillport/skillport/wire"
)

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
