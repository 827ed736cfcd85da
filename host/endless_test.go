package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skillport/skillport/internal/mcphttp"
)

// endlessLimit is how much a hostile answer sends before the test server
// gives up: far past any bound of the host, and small enough to be quick.
const endlessLimit = 256 << 20

// hostileHTTP serves f over Streamable HTTP, but answers resources/read
// (while hostile is set) with an attack: an endless body, as mode says.
func hostileHTTP(t *testing.T, f *fake, mode string, hostile *atomic.Bool, sent *atomic.Int64) string {
	t.Helper()
	s := f.build()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &msg)
		if msg.Method != "resources/read" || !hostile.Load() {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		var head, chunk string
		switch mode {
		case "json", "length":
			w.Header().Set("Content-Type", "application/json")
			if mode == "length" {
				w.Header().Set("Content-Length", fmt.Sprint(int64(1)<<40))
			}
			head = `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"contents":[{"uri":"x","text":"`
			chunk = strings.Repeat("A", 64<<10)
		case "sse":
			w.Header().Set("Content-Type", "text/event-stream")
			head = `data: {"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"contents":[{"uri":"x","text":"`
			chunk = strings.Repeat("A", 64<<10)
		case "sse-events":
			// Each event well formed and small; only their number is endless.
			w.Header().Set("Content-Type", "text/event-stream")
			ev := `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("B", 4000) + `"}}` + "\n\n"
			chunk = strings.Repeat(ev, 16)
		}
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, head)
		for n := int64(len(head)); n < endlessLimit; n += int64(len(chunk)) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return // the host hung up: the attack is over
			}
			sent.Add(int64(len(chunk)))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestEndlessAnswerIsBounded is issue 25's first attack: a server that
// answers resources/read with an endless body drove the host to 8.33 GB.
// Whatever the server sends, the host reads at most the bound of the file
// it asked for, the call fails saying so, and the session goes on.
func TestEndlessAnswerIsBounded(t *testing.T) {
	for _, mode := range []string{"json", "length", "sse", "sse-events"} {
		t.Run(mode, func(t *testing.T) {
			f := newFake("evil")
			uri := f.addSkill("big", "A skill whose read never ends", nil)
			var hostile atomic.Bool
			var sent atomic.Int64
			hostile.Store(true)
			url := hostileHTTP(t, f, mode, &hostile, &sent)
			h := connect(t, &Options{Approver: &recorder{}, CallTimeout: 20 * time.Second}, Origin{Label: "evil", URL: url})

			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			began := time.Now()
			out, err := h.Tools().ReadSkill(context.Background(), "big")
			took := time.Since(began)
			runtime.ReadMemStats(&after)
			if err == nil || out != "" {
				t.Fatalf("ReadSkill = %q, %v; want an error", clip(out), err)
			}
			limit := mcphttp.FileLimit(int64(len(f.files[uri])))
			for _, want := range []string{"resources/read", uri, fmt.Sprint(limit), "bytes"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			// The host allocates a small multiple of the limit (a few
			// hundred KiB here), nowhere near what the server sends.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("the host allocated %d MiB reading an answer bounded at %d bytes", alloc>>20, limit)
			}
			if took > 10*time.Second {
				t.Errorf("the call took %v", took)
			}
			t.Logf("refused after %v; the server got %d MiB out before the host hung up", took, sent.Load()>>20)

			// The session is intact: the same read, answered honestly, works.
			hostile.Store(false)
			if _, err := h.Tools().ReadSkill(context.Background(), "big"); err != nil {
				t.Fatalf("after the refused answer, an honest one failed: %v", err)
			}
		})
	}
}

// TestEndlessStdioLineIsBounded: a stdio server whose answer to initialize
// is one line that never ends. go-sdk's stdio transport bounds a frame at
// the MaxLineLength the host sets (MaxMessageBytes); the connection fails
// with that bound named, after reading little more than it.
func TestEndlessStdioLineIsBounded(t *testing.T) {
	script := `read req; printf '{"jsonrpc":"2.0","id":1,"result":{"x":"'; yes AAAAAAAAAAAAAAA | tr -d '\n' | head -c 268435456`
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st := connectOne(t, Origin{Label: "s", Command: "sh", Args: []string{"-c", script}}, 20*time.Second)
	runtime.ReadMemStats(&after)
	if st.Err == nil || !strings.Contains(st.Err.Error(), fmt.Sprint(MaxMessageBytes)) {
		t.Fatalf("connecting to a server sending an endless line: %v; want the frame limit named", st.Err)
	}
	// json.Decoder grows its buffer by doubling up to the frame bound:
	// about four times the bound in all, well under the 300 MB a host may
	// take whatever a server sends.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 6*MaxMessageBytes {
		t.Errorf("the host allocated %d MiB for one line bounded at %d MiB", alloc>>20, MaxMessageBytes>>20)
	}
}
