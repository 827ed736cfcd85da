//go:build !skillport_no_legacy

package host

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/wire"
)

// injecting is a client transport through which a test can deliver a
// message as if the server had sent it.
type injecting struct {
	inner mcp.Transport
	msgs  chan jsonrpc.Message
}

func (t *injecting) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ic := &injectingConn{Connection: c, extra: t.msgs, in: make(chan connRead, 1)}
	go func() {
		for {
			m, err := c.Read(context.Background())
			ic.in <- connRead{m, err}
			if err != nil {
				return
			}
		}
	}()
	return ic, nil
}

type connRead struct {
	m   jsonrpc.Message
	err error
}

type injectingConn struct {
	mcp.Connection
	extra chan jsonrpc.Message
	in    chan connRead
}

func (c *injectingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-c.in:
		if r.err != nil {
			c.in <- r
		}
		return r.m, r.err
	case m := <-c.extra:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestLegacySkillsListChangedRelists checks that a legacy server's
// notifications/skills/list_changed, which go-sdk's client cannot receive,
// makes the host list that server again.
func TestLegacySkillsListChangedRelists(t *testing.T) {
	f := &legacyFake{}
	tr := &injecting{inner: f.transport(t), msgs: make(chan jsonrpc.Message, 1)}
	h := connect(t, &Options{AllowDynamic: true, RefreshInterval: 10 * time.Millisecond}, Origin{Label: "old", Transport: tr})
	if st := h.Origins()[0]; st.Profile != ProfileLegacy || len(h.Skills()) != 2 {
		t.Fatalf("origin %+v with %d skills; want the legacy profile and 2 skills", st, len(h.Skills()))
	}
	lists := func() int {
		n := 0
		for _, c := range f.callLog() {
			if strings.HasPrefix(c, wire.MethodListSkills+" ") {
				n++
			}
		}
		return n
	}
	if n := lists(); n != 1 {
		t.Fatalf("%d skills/list calls after connecting; want 1", n)
	}
	tr.msgs <- &jsonrpc.Request{Method: wire.NotificationSkillsList, Params: []byte(`{}`)}
	deadline := time.Now().Add(5 * time.Second)
	for lists() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no skills/list after %s; calls: %v", wire.NotificationSkillsList, f.callLog())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
