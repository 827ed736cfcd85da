package skillserver

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/wire"
)

// FuzzParseFast: the thin path's reading of a request never panics, and
// whatever it accepts go-sdk reads as the same request: same method, and
// an id the response echoes exactly as go-sdk writes it.
func FuzzParseFast(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"skill://a/SKILL.md"}}`,
		`{"jsonrpc":"2.0","id":"x<y","method":"skills/list"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"skills/get","params":{"uri":"skill://a/SKILL.md"}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"skills/list"}`,
		`{"jsonrpc":"2.0","id":-0,"method":"skills/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"skills/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/skills":{}}}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m message
		m.parse(data)
		for _, version := range []string{"", ModernProtocolVersion} {
			readParams(&m, fastView{version: version})
		}
		if !m.fastOK {
			return
		}
		req := m.req
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			t.Fatalf("accepted what go-sdk refuses (%v): %s", err, data)
		}
		r, isReq := msg.(*jsonrpc.Request)
		if !isReq || r.Method != req.method || !r.IsCall() {
			t.Fatalf("accepted %s as %q, go-sdk reads %#v", data, req.method, msg)
		}
		want, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: r.ID, Result: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if got := fastMessage("", req.id, [][]byte{[]byte(`{}`)}, ""); !bytes.Equal(got, want) {
			t.Fatalf("the response to %s would start %s, go-sdk's %s", data, got, want)
		}
	})
}

// FuzzReadMeta: the thin path's reading of a 2026-07-28 request's _meta
// never panics, and whatever it accepts go-sdk reads too: go-sdk decodes
// the client capabilities and client info it names (ServerRequest's
// accessors return nil where go-sdk's validation fails), and the two
// agree on whether the client declared the Skills Extension.
func FuzzReadMeta(f *testing.F) {
	for _, s := range []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/skills":{}}}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{"tools":{}},"elicitation":{"form":{}},"experimental":{"x":1}}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"Roots":{"listChanged":"x"}}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := jsonobj.Fields(data)
		if err != nil {
			return
		}
		init, meta, ok := readMeta(fs, ModernProtocolVersion)
		if !ok {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("accepted _meta that is not an object: %s", data)
		}
		r := &mcp.ServerRequest[*mcp.ReadResourceParams]{Params: &mcp.ReadResourceParams{Meta: m}}
		caps := r.ClientCapabilities()
		if caps == nil {
			t.Fatalf("accepted capabilities go-sdk cannot read: %s", data)
		}
		if _, present := m[mcp.MetaKeyClientInfo]; present && r.ClientInfo() == nil {
			t.Fatalf("accepted client info go-sdk cannot read: %s", data)
		}
		_, sdk := caps.Extensions[wire.ExtensionID]
		if ours := declaredExtension(init, meta); ours != sdk {
			t.Fatalf("declared the extension: %v, go-sdk reads %v, in %s", ours, sdk, data)
		}
	})
}

// FuzzReadInit: the stdio thin path's reading of initialize params never
// panics, and what it accepts decodes as go-sdk's InitializeParams, with
// the same answer to whether the client declared the Skills Extension.
func FuzzReadInit(f *testing.F) {
	for _, s := range []string{
		`{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"c","version":"1"}}`,
		`{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/skills":{}}}}`,
		`{"protocolVersion":"2025-06-18","capabilities":null}`,
		`{"Capabilities":{"extensions":{"io.modelcontextprotocol/skills":{}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		init, ok := readInit(data)
		if !ok {
			return
		}
		var p mcp.InitializeParams
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("accepted params go-sdk's types cannot read (%v): %s", err, data)
		}
		sdk := false
		if p.Capabilities != nil {
			_, sdk = p.Capabilities.Extensions[wire.ExtensionID]
		}
		if ours := declaredExtension(init, nil); ours != sdk {
			t.Fatalf("declared the extension: %v, the decoded params say %v, in %s", ours, sdk, data)
		}
	})
}
