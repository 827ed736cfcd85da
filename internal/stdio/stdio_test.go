package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve runs an MCP server on a Transport whose input is the returned
// writer; replies arrive on the returned channel, one decoded line each.
func serve(t *testing.T, max int) (io.WriteCloser, <-chan map[string]any) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx, &Transport{In: inR, Out: outW, MaxLine: max})
	replies := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("reply is not JSON: %q", sc.Text())
			}
			replies <- m
		}
	}()
	return inW, replies
}

func next(t *testing.T, replies <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m := <-replies:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no reply")
	}
	return nil
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func TestMalformedLinesAreAnsweredAndServingGoesOn(t *testing.T) {
	in, replies := serve(t, 1024)
	send := func(s string) { in.Write([]byte(s + "\n")) }
	send(`{}`)
	if m := next(t, replies); errCode(m) != CodeInvalidRequest || m["id"] != nil {
		t.Errorf("{}: %v", m)
	}
	send(`not json at all`)
	if m := next(t, replies); errCode(m) != CodeParseError || !strings.Contains(m["error"].(map[string]any)["message"].(string), "line 2: not JSON") {
		t.Errorf("not JSON: %v", m)
	}
	send(`{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}`)
	if m := next(t, replies); m["id"] != 1.0 || m["result"] == nil {
		t.Errorf("initialize after bad lines: %v", m)
	}
	send(`{"jsonrpc": "2.0", "method": "notifications/initialized"}`)
	// A line over the limit is skipped without being buffered whole.
	send(`{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": "` + strings.Repeat("x", 5000) + `"}}`)
	if m := next(t, replies); errCode(m) != CodeParseError || !strings.Contains(m["error"].(map[string]any)["message"].(string), "longer than 1024 bytes") {
		t.Errorf("long line: %v", m)
	}
	send(`{"jsonrpc": "2.0", "id": 3, "method": "ping"}`)
	if m := next(t, replies); m["id"] != 3.0 || m["error"] != nil {
		t.Errorf("ping after a long line: %v", m)
	}
}

func FuzzFilter(f *testing.F) {
	f.Add([]byte("{}\nnot json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n[]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var pass, out strings.Builder
		if err := filter(strings.NewReader(string(data)), &pass, &lockedWriter{w: &out}, 256, nil); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if l != "" && !json.Valid([]byte(l)) {
				t.Fatalf("reply %q is not JSON", l)
			}
		}
	})
}
