package skillserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHTTPPeek feeds arbitrary bodies to the routing peek: it never
// panics, always puts the whole body back for go-sdk, and reads the method
// and the _meta protocol version of a well-formed request as JSON does.
func FuzzHTTPPeek(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"server/discover"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"params":[1,2]}`, `{"id":{"x":1}}`, `null`, ``, `{`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		p, ok := peek(httptest.NewRecorder(), r)
		if !ok {
			t.Fatalf("a %d-byte body was refused", len(body))
		}
		back, err := io.ReadAll(r.Body)
		if err != nil || string(back) != body {
			t.Fatalf("the body was not put back whole")
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(body), &msg) == nil {
			_, meta := msg.Params.Meta["io.modelcontextprotocol/protocolVersion"]
			if p.method != msg.Method || p.meta != meta {
				t.Fatalf("peek read method %q meta %v, JSON says %q %v", p.method, p.meta, msg.Method, meta)
			}
		}
	})
}
