package server

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/wire"
)

// DefaultListChangedDelay is the default of Options.ListChangedDelay.
const DefaultListChangedDelay = time.Second

// Transport wraps t so that a client connected through it receives
// notifications/skills/list_changed when the skills change, if it speaks a
// legacy profile: it called skills/get by name, skills/read,
// skills/read_reference or skills/execute, or it called skills/list without
// declaring the Skills Extension. SEP-2640 clients rely on ttlMs and
// notifications/resources/list_changed instead, and never see it.
//
// go-sdk offers servers no way to send a notification it does not define,
// so the notification is written on the connection itself. Connections
// that go-sdk creates on its own, such as those of its Streamable HTTP
// handler, cannot be wrapped; their clients get
// notifications/resources/list_changed only.
//
// A stdio transport of skillport's (package internal/stdio, used by
// `skillport serve` and skills.Serve) also gets the thin read path of a
// server made by [New] (see Options.NoFastPath).
func (srv *Server) Transport(t mcp.Transport) mcp.Transport {
	t = srv.fastStdio(t)
	if !srv.prof.legacyCapability() {
		return t
	}
	nt := &notifyTransport{inner: t, srv: srv}
	if pvs, ok := t.(mcp.ProtocolVersionSupporter); ok {
		return &notifyTransportPVS{notifyTransport: nt, pvs: pvs}
	}
	return nt
}

type notifyTransport struct {
	inner mcp.Transport
	srv   *Server
}

type notifyTransportPVS struct {
	*notifyTransport
	pvs mcp.ProtocolVersionSupporter
}

func (t *notifyTransportPVS) SupportsProtocolVersion(v string) bool {
	return t.pvs.SupportsProtocolVersion(v)
}

func (t *notifyTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	nc := &notifyConn{Connection: c, srv: t.srv}
	t.srv.legacyConns.add(nc)
	return nc, nil
}

// notifyConn watches what its client asks for, to tell whether it speaks
// a legacy profile.
type notifyConn struct {
	mcp.Connection
	srv      *Server
	declared atomic.Bool // the client declared the Skills Extension
	legacy   atomic.Bool
}

func (c *notifyConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		switch req.Method {
		case "initialize":
			var p struct {
				Capabilities struct {
					Extensions map[string]json.RawMessage `json:"extensions"`
				} `json:"capabilities"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				_, ok := p.Capabilities.Extensions[wire.ExtensionID]
				c.declared.Store(ok)
			}
		case wire.MethodListSkills:
			if !c.declared.Load() {
				c.legacy.Store(true)
			}
		case wire.MethodGetSkill:
			var p struct {
				Name *string `json:"name"`
			}
			if json.Unmarshal(req.Params, &p) == nil && p.Name != nil {
				c.legacy.Store(true)
			}
		case wire.MethodReadSkill, wire.MethodReadReference, wire.MethodExecute:
			c.legacy.Store(true)
		}
	}
	return msg, err
}

func (c *notifyConn) Close() error {
	c.srv.legacyConns.remove(c)
	return c.Connection.Close()
}

// connSet holds the live wrapped connections and the pending notification.
type connSet struct {
	mu    sync.Mutex
	conns map[*notifyConn]bool
	timer *time.Timer
}

func (s *connSet) add(c *notifyConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		s.conns = map[*notifyConn]bool{}
	}
	s.conns[c] = true
}

func (s *connSet) remove(c *notifyConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// skillsChanged schedules notifications/skills/list_changed for the legacy
// connections, coalescing bursts.
func (srv *Server) skillsChanged() {
	s := &srv.legacyConns
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil || len(s.conns) == 0 {
		return
	}
	delay := srv.opts.ListChangedDelay
	if delay <= 0 {
		delay = DefaultListChangedDelay
	}
	s.timer = time.AfterFunc(delay, func() {
		s.mu.Lock()
		s.timer = nil
		var targets []*notifyConn
		for c := range s.conns {
			if c.legacy.Load() {
				targets = append(targets, c)
			}
		}
		s.mu.Unlock()
		for _, c := range targets {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := c.Write(ctx, &jsonrpc.Request{Method: wire.NotificationSkillsList}); err != nil {
				srv.log.Warn("cannot send "+wire.NotificationSkillsList, "err", err)
			}
			cancel()
		}
	})
}
