//go:build !skillport_no_legacy

package host

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scripted is a connection that reads the given messages, then EOF.
type scripted struct {
	mcp.Connection
	msgs []jsonrpc.Message
}

func (c *scripted) Read(context.Context) (jsonrpc.Message, error) {
	if len(c.msgs) == 0 {
		return nil, io.EOF
	}
	m := c.msgs[0]
	c.msgs = c.msgs[1:]
	return m, nil
}

func response(id int64, result string) *jsonrpc.Response {
	rid, _ := jsonrpc.MakeID(float64(id))
	return &jsonrpc.Response{ID: rid, Result: json.RawMessage(result)}
}

// TestSniffKeepsHandshakeOnly: the results kept to find a legacy "skills"
// capability are bounded, however many a server sends before its
// handshake, are found in order (the first result with capabilities
// decides), and are let go once the connection is set up.
func TestSniffKeepsHandshakeOnly(t *testing.T) {
	legacy := `{"capabilities":{"skills":{"listChanged":true}}}`
	plain := `{"capabilities":{"resources":{}}}`
	for _, tc := range []struct {
		name string
		msgs []string
		want bool
	}{
		{"legacy", []string{legacy}, true},
		{"plain", []string{plain}, false},
		{"first with capabilities decides", []string{`{}`, plain, legacy}, false},
		{"after junk", []string{`{}`, `{"x":1}`, legacy}, true},
		{"past the bound", append(repeat(`{}`, maxSniffed), legacy), false},
	} {
		var msgs []jsonrpc.Message
		for i, r := range tc.msgs {
			msgs = append(msgs, response(int64(i+1), r))
		}
		c := &sniffConn{Connection: &scripted{msgs: msgs}}
		for range msgs {
			if _, err := c.Read(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if len(c.results) > maxSniffed {
			t.Errorf("%s: kept %d results, over the bound of %d", tc.name, len(c.results), maxSniffed)
		}
		if got := c.legacySkills(); got != tc.want {
			t.Errorf("%s: legacySkills = %v, want %v", tc.name, got, tc.want)
		}
		c.settle()
		c.Connection = &scripted{msgs: []jsonrpc.Message{response(99, legacy)}}
		c.Read(context.Background())
		if len(c.results) != 0 {
			t.Errorf("%s: %d results kept after set-up", tc.name, len(c.results))
		}
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
