package skillserver

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/skillport/skillport/wire"
)

// DefaultListChangedDelay is the default of Options.ListChangedDelay.
const DefaultListChangedDelay = time.Second

// legacyConn is what the legacy profiles know of one connection: whether
// its client speaks one of them, to be sent notifications/skills/list_changed.
type legacyConn struct {
	*notifyConn
	declared atomic.Bool // the client declared the Skills Extension
	legacy   atomic.Bool
}

// connect watches the connection's requests when a legacy profile is
// served.
func (p *profileSet) connect(nc *notifyConn) (see func(*jsonrpc.Request), done func()) {
	if !p.legacy {
		return nil, nil
	}
	c := &legacyConn{notifyConn: nc}
	p.conns.add(c)
	return c.see, func() { p.conns.remove(c) }
}

// see tells from a request whether the client speaks a legacy profile.
func (c *legacyConn) see(req *jsonrpc.Request) {
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

// connSet holds the live wrapped connections and the pending notification.
type connSet struct {
	mu    sync.Mutex
	conns map[*legacyConn]bool
	timer *time.Timer
}

func (s *connSet) add(c *legacyConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		s.conns = map[*legacyConn]bool{}
	}
	s.conns[c] = true
}

func (s *connSet) remove(c *legacyConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// changed schedules notifications/skills/list_changed for the legacy
// connections, coalescing bursts.
func (p *profileSet) changed() {
	srv, s := p.srv, &p.conns
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
		var targets []*legacyConn
		for c := range s.conns {
			if c.legacy.Load() {
				targets = append(targets, c)
			}
		}
		s.mu.Unlock()
		// Queued, not written: one client that does not read must not
		// hold up the others.
		for _, c := range targets {
			c.out.put(c.notifyConn, &jsonrpc.Request{Method: wire.NotificationSkillsList})
		}
	})
}
