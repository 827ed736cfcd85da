package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eofReader reads r and closes eof when r is exhausted.
type eofReader struct {
	r    io.Reader
	once sync.Once
	eof  chan struct{}
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.once.Do(func() { close(e.eof) })
	}
	return n, err
}

// piped runs a server on input as a client piping it and closing its end
// would, and returns the ids answered once the server stopped.
func piped(t *testing.T, input string, eof chan struct{}, handlerWaitsForEOF bool) []string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if handlerWaitsForEOF {
			<-eof // still working when the input ends
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	in := &eofReader{r: strings.NewReader(input), eof: eof}
	if err := s.Run(ctx, &Transport{In: in, Out: &out}); err != nil && ctx.Err() != nil {
		t.Fatalf("server did not stop: %v", err)
	}
	var ids []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil {
			ids = append(ids, string(m.ID))
		}
	}
	return ids
}

const pipedInput = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}
`

// TestEveryRequestReadBeforeEOFIsAnswered: a client that pipes its
// requests and closes stdin gets every answer, over 20 runs, even from a
// handler still running when the input ended.
func TestEveryRequestReadBeforeEOFIsAnswered(t *testing.T) {
	for _, waits := range []bool{false, true} {
		for run := range 20 {
			ids := piped(t, pipedInput, make(chan struct{}), waits)
			if strings.Join(ids, ",") != "1,2" {
				t.Fatalf("handler waits for EOF %v, run %d: answered ids %v, want 1 and 2", waits, run, ids)
			}
		}
	}
}

// TestDrainIsBounded: a handler that never returns holds the end of the
// session for Drain, not forever.
func TestDrainIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done() // never answers by itself
			return nil, nil, ctx.Err()
		})
		start := time.Now()
		s.Run(context.Background(), &Transport{In: strings.NewReader(pipedInput), Out: io.Discard, Drain: time.Minute})
		if d := time.Since(start); d != time.Minute {
			t.Errorf("the session ended after %v, want the drain bound of 1m", d)
		}
	})
}
