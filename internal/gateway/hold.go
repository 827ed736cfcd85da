package gateway

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skillserver"
)

// A read_skill_file answer is charged to the server's byte budget
// (chargeRead) for as long as it is held in memory, and go-sdk holds it
// after the tool returns: it encodes the result and writes it to the
// response of the HTTP request that carried the call, and only that
// request's ServeHTTP returning says it is written (or its client gone).
// go-sdk runs tool handlers in the context of the request that opened the
// session, not of the one carrying the call, so the two are tied by a
// header: go-sdk hands each request's header to its handlers
// (CallToolRequest.Extra.Header). [HTTPHandler] sets it on every POST,
// replacing whatever a client sent under that name.
const holdHeader = "Skillport-Internal-Charge-Hold"

// HTTPHandler is the gateway's Streamable HTTP handler ([Gateway.Handler]):
// skillserver's, with the budget charges of each request's tool calls
// held until its answer is written.
type HTTPHandler struct {
	*skillserver.HTTPHandler
	holds *holds
}

// ServeHTTP implements http.Handler.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.HTTPHandler.ServeHTTP(w, r)
		return
	}
	key, end := h.holds.open()
	defer end()
	r = r.Clone(r.Context()) // a handler must not change the request it was given
	r.Header.Set(holdHeader, key)
	h.HTTPHandler.ServeHTTP(w, r)
}

// holds are the open holds of a gateway's HTTP requests, by key.
type holds struct {
	seq atomic.Uint64
	mu  sync.Mutex
	m   map[string]*hold
}

// hold keeps the charges of the tool calls of one HTTP request until the
// request is answered.
type hold struct {
	mu    sync.Mutex
	ended bool
	ends  []func()
}

// open starts a hold for one request; end, called once the request is
// answered, gives back every charge its calls handed over and that they
// are done with.
func (hs *holds) open() (key string, end func()) {
	key = strconv.FormatUint(hs.seq.Add(1), 36)
	h := &hold{}
	hs.mu.Lock()
	if hs.m == nil {
		hs.m = map[string]*hold{}
	}
	hs.m[key] = h
	hs.mu.Unlock()
	return key, func() {
		hs.mu.Lock()
		delete(hs.m, key)
		hs.mu.Unlock()
		h.mu.Lock()
		h.ended = true
		ends := h.ends
		h.ends = nil
		h.mu.Unlock()
		for _, f := range ends {
			f()
		}
	}
}

type holdKey struct{}

// withHold returns ctx carrying the hold of the HTTP request that carried
// req, if it is open.
func (hs *holds) withHold(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if hs == nil || req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ctx
	}
	key := req.Extra.Header.Get(holdHeader)
	hs.mu.Lock()
	h := hs.m[key]
	hs.mu.Unlock()
	if h == nil {
		return ctx
	}
	return context.WithValue(ctx, holdKey{}, h)
}

// keep ties release to the hold of ctx: the returned done, which the tool
// defers, and the hold's end must both have happened for release to run.
// Without a hold (stdio, a direct call) done is release itself.
func keep(ctx context.Context, release func()) (done func()) {
	h, _ := ctx.Value(holdKey{}).(*hold)
	if h == nil {
		return release
	}
	var left atomic.Int32
	left.Store(2)
	half := func() {
		if left.Add(-1) == 0 {
			release()
		}
	}
	h.mu.Lock()
	if h.ended { // the client is gone: the tool's return is the later event
		h.mu.Unlock()
		return release
	}
	h.ends = append(h.ends, half)
	h.mu.Unlock()
	return half
}
