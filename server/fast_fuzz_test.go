package server

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
		req, ok := parseFast(data)
		for _, version := range []string{"", ModernProtocolVersion} {
			readParams(req, fastView{version: version})
		}
		if !ok {
			return
		}
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
