package skillserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOutboxBound: a client that reads nothing is held at most
// maxPendingNotes change notifications, however many distinct ones the
// server sends, and none once its connection closed.
func TestOutboxBound(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	conn, err := (&mcp.IOTransport{Reader: c2, Writer: c2}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	nc := &notifyConn{Connection: conn, srv: srv}
	for i := range 3 * maxPendingNotes {
		params := fmt.Appendf(nil, `{"uri":"skill://s%d/SKILL.md"}`, i)
		if err := nc.Write(context.Background(), &jsonrpc.Request{Method: notifyUpdated, Params: params}); err != nil {
			t.Fatal(err)
		}
		// The same notification again is not queued twice.
		nc.Write(context.Background(), &jsonrpc.Request{Method: notifyUpdated, Params: params})
	}
	// One is being written (blocked: nobody reads), the rest wait.
	if n := nc.out.pendingNotes(); n != maxPendingNotes {
		t.Errorf("%d pending, want the bound %d", n, maxPendingNotes)
	}
	nc.Close()
	if n := nc.out.pendingNotes(); n != 0 {
		t.Errorf("%d pending after Close", n)
	}
	nc.Write(context.Background(), &jsonrpc.Request{Method: notifyListChanged})
	if n := nc.out.pendingNotes(); n != 0 {
		t.Errorf("%d pending after a write to a closed connection", n)
	}
}
