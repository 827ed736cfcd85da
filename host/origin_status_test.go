package host

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectOne connects a host with one origin and returns its status.
func connectOne(t *testing.T, o Origin, timeout time.Duration) OriginStatus {
	t.Helper()
	h, err := New([]Origin{o}, &Options{CallTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	h.Connect(context.Background())
	return h.Origins()[0]
}

func TestStdioServerDeathShowsStderrAndStatus(t *testing.T) {
	st := connectOne(t, Origin{Label: "s", Command: "sh", Args: []string{"-c", `echo "starting" >&2; echo "fatal: missing API key" >&2; exit 3`}}, 5*time.Second)
	if st.Err == nil {
		t.Fatal("a server that exits at once connected")
	}
	msg := st.Err.Error()
	for _, want := range []string{"exited with status 3", "last stderr lines", "\n  fatal: missing API key", "\n  starting"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if errors.Is(st.Err, ErrNoSkills) {
		t.Error("a dead server is reported as a server without skills")
	}
}

func TestStdioStderrTailIsBounded(t *testing.T) {
	// 5,000 long lines: only the last few, cut short, are kept.
	script := `i=0; while [ $i -lt 5000 ]; do printf '%0400d\n' $i >&2; i=$((i+1)); done; echo last >&2; exit 1`
	st := connectOne(t, Origin{Label: "s", Command: "sh", Args: []string{"-c", script}}, 10*time.Second)
	if st.Err == nil {
		t.Fatal("connected")
	}
	msg := st.Err.Error()
	if !strings.HasSuffix(msg, "\n  last") || len(msg) > 2*stderrTailLines*stderrTailLine || strings.Count(msg, "\n  ") != stderrTailLines {
		t.Errorf("%d bytes, %d lines:\n%s", len(msg), strings.Count(msg, "\n  "), msg)
	}
}

func TestServerWithoutSkillsIsErrNoSkills(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "tools-only", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, nil
	})
	ct, stt := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx, stt)
	st := connectOne(t, Origin{Label: "tools", Transport: ct}, 5*time.Second)
	if !errors.Is(st.Err, ErrNoSkills) || !errors.Is(st.Err, ErrUnavailable) {
		t.Errorf("err %v: want ErrNoSkills and ErrUnavailable", st.Err)
	}
}

func TestSlowServerIsDeadlineExceeded(t *testing.T) {
	st := connectOne(t, Origin{Label: "slow", Command: "sleep", Args: []string{"30"}}, 300*time.Millisecond)
	if !errors.Is(st.Err, context.DeadlineExceeded) || errors.Is(st.Err, ErrNoSkills) {
		t.Errorf("err %v: want context.DeadlineExceeded", st.Err)
	}
}

// TestSilentHTTPServerIsDeadlineExceeded: an HTTP server that accepts the
// initialize request and never answers is given up at CallTimeout. go-sdk's
// Connect over Streamable HTTP does not end with its context (it took 5 s
// here when called directly), so the host watches it from a goroutine even
// though each write is bound to the context.
func TestSilentHTTPServerIsDeadlineExceeded(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer srv.Close()
	defer close(done)
	start := time.Now()
	st := connectOne(t, Origin{Label: "silent", URL: srv.URL}, 300*time.Millisecond)
	if !errors.Is(st.Err, context.DeadlineExceeded) || !strings.Contains(st.Err.Error(), "did not complete initialization") {
		t.Errorf("err %v: want context.DeadlineExceeded", st.Err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v, CallTimeout is 300ms", d)
	}
}
