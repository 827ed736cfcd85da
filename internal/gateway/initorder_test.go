package gateway_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/gateway"
)

// A client connected before the upstreams answer receives no list_changed
// before it initializes.
func TestNoListChangedBeforeInitialize(t *testing.T) {
	docs, _ := ourUpstream(t, "docs", examples)
	g, err := gateway.New([]host.Origin{docs}, &host.Options{Approver: &allow{}, Logger: discard, CallTimeout: 5 * time.Second},
		&gateway.Options{Logger: discard, UpdateDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ss, err := g.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	g.Start(ctx)
	<-g.Ready()
	readCtx, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	if msg, err := conn.Read(readCtx); err == nil {
		t.Fatalf("the gateway sent %#v before initialize", msg)
	}
}

// The instructions name only the upstreams that answered.
func TestInstructionsOmitDeadUpstreams(t *testing.T) {
	docs, _ := ourUpstream(t, "docs", examples)
	silent, _ := mcp.NewInMemoryTransports()
	g := newGateway(t, []host.Origin{docs, {Label: "deadupstream", Transport: silent}}, &host.Options{Approver: &allow{}, CallTimeout: 200 * time.Millisecond}, nil)
	<-g.Ready()
	cs := clientOf(t, g, nil)
	inst := cs.InitializeResult().Instructions
	if strings.Contains(inst, "deadupstream") || !strings.Contains(inst, "from docs.") {
		t.Errorf("instructions: %.200s", inst)
	}
}

// An upstream failure is logged once, with its cause; go-sdk's per-session
// lines are not at INFO.
func TestUpstreamFailureLoggedOnce(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dead := host.Origin{Label: "dead", Command: "sh", Args: []string{"-c", `echo "fatal: missing API key" >&2; exit 3`}}
	docs, _ := ourUpstream(t, "docs", examples)
	g := newGateway(t, []host.Origin{docs, dead}, &host.Options{Approver: &allow{}, Logger: log}, &gateway.Options{Logger: log})
	<-g.Ready()
	clientOf(t, g, nil) // go-sdk logs a session's connection before the client's Connect returns
	waitFor(t, "the upstream's failure in the log", 10*time.Second, func() bool { return strings.Contains(buf.String(), "status 3") })
	s := buf.String()
	if strings.Count(s, "missing API key") != 1 || !strings.Contains(s, "status 3") {
		t.Errorf("the failure is not logged exactly once with its cause:\n%s", s)
	}
	if strings.Contains(s, "session connected") || strings.Contains(s, "err=<nil>") {
		t.Errorf("noise at INFO:\n%s", s)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
