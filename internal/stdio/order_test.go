package stdio

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzResponseID: reading the id of a written message never panics, and
// for every response go-sdk writes it finds the id as the request side
// keys it.
func FuzzResponseID(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), "a\"b\\c,\"result\":", int64(7))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}`), "", int64(-3))
	f.Fuzz(func(t *testing.T, line []byte, sid string, nid int64) {
		responseID(line)
		for _, raw := range []any{sid, nid} {
			id, err := jsonrpc.MakeID(raw)
			if err != nil {
				continue
			}
			data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: json.RawMessage(`{"a":1}`)})
			if err != nil {
				continue
			}
			got, result, ok := responseID(data)
			if !ok || !result || got != idKey(id) {
				t.Fatalf("%s: read id %q (result %v, ok %v), want %q", data, got, result, ok, idKey(id))
			}
		}
	})
}
