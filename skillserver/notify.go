package skillserver

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport wraps t so that the compatibility profiles see what a client
// connected through it asks for, and can notify it on the connection
// itself: a client of a legacy profile (one that called skills/get by
// name, skills/read, skills/read_reference or skills/execute, or
// skills/list without declaring the Skills Extension) receives
// notifications/skills/list_changed when the skills change, which go-sdk
// offers servers no way to send. Extension clients rely on ttlMs and
// notifications/resources/list_changed instead, and never see it.
// Connections that go-sdk creates on its own, such as those of its
// Streamable HTTP handler, cannot be wrapped; their clients get
// notifications/resources/list_changed only.
//
// Change notifications (list_changed of any kind, resources/updated) are
// handed to the connection without waiting for the client to read them:
// go-sdk, and the server for notifications/skills/list_changed, notify
// sessions one after another, so a client that stops reading its
// connection would otherwise hold up every session notified after it, up
// to ten seconds per change. Each connection keeps at most one pending
// copy of each distinct notification, and at most 1024 in all.
//
// A stdio transport of skillport's (package internal/stdio, used by
// `skillport serve` and skills.Serve) also gets the thin read path of a
// server made by [New] (see Options.NoFastPath).
func (srv *Server) Transport(t mcp.Transport) mcp.Transport {
	t = srv.fastStdio(t)
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
	if t.srv.compat != nil {
		nc.see, nc.done = t.srv.compat.connect(nc)
	}
	return nc, nil
}

// notifyConn shows the compatibility profiles what its client asks for,
// and sends change notifications on its own goroutine.
type notifyConn struct {
	mcp.Connection
	srv  *Server
	see  func(*jsonrpc.Request) // the profiles' watcher, or nil
	done func()
	out  outbox
}

func (c *notifyConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && c.see != nil {
		c.see(req)
	}
	return msg, err
}

// Write queues a change notification for the connection's sender and
// writes everything else (responses, requests, progress and log
// notifications, which belong to a request) in place.
func (c *notifyConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && isChangeNote(req.Method) {
		c.out.put(c, req)
		return nil
	}
	return c.Connection.Write(ctx, msg)
}

func (c *notifyConn) Close() error {
	if c.done != nil {
		c.done()
	}
	c.out.close()
	return c.Connection.Close()
}

// isChangeNote reports whether method is a notification that tells every
// interested session that something changed, rather than answering one of
// its requests. (The profiles queue their own with out.put.)
func isChangeNote(method string) bool {
	switch method {
	case notifyListChanged, notifyUpdated,
		"notifications/tools/list_changed", "notifications/prompts/list_changed":
		return true
	}
	return false
}

// maxPendingNotes bounds the change notifications a connection holds for a
// client that does not read them. A notification equal to one already
// pending is dropped, since it would tell the client nothing more; so the
// bound is reached only by resources/updated for that many distinct URIs,
// after which further ones are dropped with a warning (the client, once it
// reads again, re-reads what it subscribed to after the list_changed it
// still gets).
const maxPendingNotes = 1024

// outbox holds a connection's pending change notifications, in order, and
// runs at most one goroutine writing them.
type outbox struct {
	mu      sync.Mutex
	pending []*jsonrpc.Request
	keys    map[string]bool // method and params of the pending ones
	running bool
	closed  bool
}

// noteWriteTimeout is the deadline of one write of a change notification,
// as go-sdk gives its own (transports that cannot interrupt a write stop
// only when the connection closes, which ends the sender too).
const noteWriteTimeout = 10 * time.Second

func (o *outbox) put(c *notifyConn, req *jsonrpc.Request) {
	key := req.Method + "\x00" + string(req.Params)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.keys[key] {
		return
	}
	if len(o.pending) >= maxPendingNotes {
		c.srv.log.Warn("a client is not reading its connection; dropping "+req.Method, "pending", len(o.pending))
		return
	}
	if o.keys == nil {
		o.keys = map[string]bool{}
	}
	o.keys[key] = true
	o.pending = append(o.pending, req)
	if !o.running {
		o.running = true
		go o.send(c)
	}
}

// send writes the pending notifications until there are none.
func (o *outbox) send(c *notifyConn) {
	for {
		o.mu.Lock()
		if len(o.pending) == 0 || o.closed {
			o.running = false
			o.mu.Unlock()
			return
		}
		req := o.pending[0]
		o.pending[0] = nil
		o.pending = o.pending[1:]
		delete(o.keys, req.Method+"\x00"+string(req.Params))
		o.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), noteWriteTimeout)
		if err := c.Connection.Write(ctx, req); err != nil {
			c.srv.log.Warn("cannot send "+req.Method, "err", err)
		}
		cancel()
	}
}

// pendingNotes is how many notifications wait to be written.
func (o *outbox) pendingNotes() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending)
}

func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	o.pending, o.keys = nil, nil
}
