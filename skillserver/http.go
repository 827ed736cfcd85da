package skillserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/budget"
)

// Defaults for [HTTPOptions].
const (
	// DefaultSessionTimeout is how long a session of an older protocol
	// revision lives without any request or open stream.
	DefaultSessionTimeout = 5 * time.Minute
	// DefaultMaxSessions is the most sessions held at once.
	DefaultMaxSessions = 1000
)

// ModernProtocolVersion is the first protocol revision whose requests are
// self-contained (SEP-2575): they carry their version and client
// capabilities in _meta, need no session, and receive notifications on
// subscriptions/listen.
const ModernProtocolVersion = "2026-07-28"

// CodeTooManySessions is the JSON-RPC error code sent, with HTTP 503, to an
// initialize that would exceed [HTTPOptions.MaxSessions]. It is in the
// range JSON-RPC leaves to implementations.
const CodeTooManySessions = -32050

// maxPeekBytes bounds the body read to decide how a request is served; it
// is go-sdk's own request body limit, so nothing go-sdk would accept is cut.
const maxPeekBytes = mcp.DefaultMaxRequestBodyBytes

// HTTPOptions configure [NewHTTPHandler]. The zero value serves every
// protocol revision on one endpoint with the default session limits.
type HTTPOptions struct {
	// Stateless serves every request, of every revision, without a session:
	// for replicas behind a load balancer. Clients of revisions before
	// 2026-07-28 then receive no notifications, and are not told they
	// would.
	Stateless bool
	// SessionTimeout closes a session that has had no request and no open
	// stream for this long; zero means DefaultSessionTimeout, negative
	// means never.
	SessionTimeout time.Duration
	// MaxSessions caps the sessions held at once; an initialize beyond it
	// is answered HTTP 503. Zero means DefaultMaxSessions, negative means
	// no cap.
	MaxSessions int
	// Logger receives go-sdk's transport errors; nil means slog.Default().
	Logger *slog.Logger
	// ResponseBudget caps the bytes held by large resources/read answers
	// being sent, on all connections together, when the request's context
	// carries no budget of the whole server (package endpoint puts one
	// there). Zero means 64 MiB, negative means no cap.
	ResponseBudget int64
	// HostChecked turns off go-sdk's own check of the Host header (a
	// request reaching a loopback address must name localhost), for a
	// handler behind package endpoint, which applies one Host policy to
	// every route, host names it was told to allow included.
	HostChecked bool
}

// HTTPHandler serves an MCP server over Streamable HTTP, every protocol
// revision on one endpoint: a 2026-07-28 request is served statelessly (its
// notifications travel on subscriptions/listen), the initialize of an older
// revision gets a session, with subscriptions and list_changed on its GET
// stream. Sessions are capped in number and expire when idle. Its methods
// are safe for concurrent use.
type HTTPHandler struct {
	srv       *mcp.Server
	opts      HTTPOptions
	stateful  http.Handler
	stateless http.Handler
	fast      *Server // answers reads directly (fast_http.go); nil: never
	budget    *budget.Budget
	parses    atomic.Int64 // bodies parsed (readMessage): TestOneParsePerRequest counts them
	metas     metaCache    // what the thin path read of 2026-07-28 requests' _meta

	mu       sync.Mutex
	sessions map[string]*session // the session table (sessions.go)
	live     int                 // entries whose go-sdk session has not ended
	pending  int                 // new-session requests being served
	closed   bool
}

// NewHTTPHandler returns the Streamable HTTP handler of s. Mount it at the
// MCP endpoint (e.g. /mcp); call Close when the server stops. For a
// server made by [New], [Server.HTTPHandler] serves the same, faster.
func NewHTTPHandler(s *mcp.Server, opts *HTTPOptions) *HTTPHandler {
	return newHTTPHandler(s, nil, opts)
}

// HTTPHandler returns the Streamable HTTP handler of the MCP server srv
// is installed on, as [NewHTTPHandler] does, which answers the hot reads
// (resources/read, skills/get, skills/list, resources/directory/read) of
// a server made by [New] itself, with the bytes go-sdk would send (see
// [Options.NoFastPath]).
func (srv *Server) HTTPHandler(opts *HTTPOptions) *HTTPHandler {
	if !srv.thin() {
		return newHTTPHandler(srv.mcp, nil, opts)
	}
	return newHTTPHandler(srv.mcp, srv, opts)
}

func newHTTPHandler(s *mcp.Server, fast *Server, opts *HTTPOptions) *HTTPHandler {
	h := &HTTPHandler{srv: s, sessions: map[string]*session{}, fast: fast}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.SessionTimeout == 0 {
		h.opts.SessionTimeout = DefaultSessionTimeout
	}
	if h.opts.MaxSessions == 0 {
		h.opts.MaxSessions = DefaultMaxSessions
	}
	if h.opts.Logger == nil {
		h.opts.Logger = slog.Default()
	}
	h.budget = budget.New(h.opts.ResponseBudget, 0)
	get := func(*http.Request) *mcp.Server { return s }
	h.stateful = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: h.opts.Logger, DisableLocalhostProtection: h.opts.HostChecked})
	h.stateless = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, Logger: h.opts.Logger, DisableLocalhostProtection: h.opts.HostChecked})
	return h
}

// Sessions returns the number of sessions held, for metrics.
func (h *HTTPHandler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live
}

// Close closes every session and refuses new ones.
func (h *HTTPHandler) Close() error {
	h.mu.Lock()
	h.closed = true
	var open []*mcp.ServerSession
	for _, s := range h.sessions {
		if s.timer != nil {
			s.timer.Stop()
		}
		if !s.ended {
			open = append(open, s.ss)
		}
	}
	clear(h.sessions)
	h.live = 0
	h.mu.Unlock()
	for _, ss := range open {
		ss.Close()
	}
	return nil
}

// noPushKey marks the context of a request served without a session to a
// client of an older revision: nothing can reach it after its response.
type noPushKey struct{}

// cannotPush reports whether notifications cannot reach the client of the
// request whose context is ctx.
func cannotPush(ctx context.Context) bool {
	v, _ := ctx.Value(noPushKey{}).(bool)
	return v
}

// ServeHTTP routes each request by what it says of itself, so that one URL
// serves every client: a 2026-07-28 header, server/discover,
// subscriptions/listen or a protocol version in _meta mean the stateless
// path; a session id means that session; anything else outside a session
// (normally an older revision's initialize) opens one, within the cap.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	version := r.Header.Get("MCP-Protocol-Version")
	sid := r.Header.Get("Mcp-Session-Id")
	known := version == "" || slices.Contains(mcp.SupportedProtocolVersions(), version)
	// Only a request outside a session can be of either kind; the routing
	// of such a request, and an error answer to it, need its body.
	route := r.Method == http.MethodPost && version < ModernProtocolVersion && (sid == "" || !known)
	_, label := w.(rpcLabeler)
	var msg *message
	var readErr error
	if r.Method == http.MethodPost && (h.fast != nil || route || label) {
		// Read and parse once: the thin path, the budget's charge, the
		// routing and the endpoint's label all work from msg, and go-sdk
		// from the same bytes.
		msg, readErr = h.readMessage(r)
		labelMethod(w, msg)
	}
	if h.fast != nil && msg != nil && h.serveFast(w, r, msg) {
		return
	}
	release, ok := h.chargeSDK(w, r, msg)
	if !ok {
		return
	}
	defer release()
	if version >= ModernProtocolVersion {
		// go-sdk answers an unknown later version with the JSON-RPC error
		// listing the versions it accepts.
		h.stateless.ServeHTTP(w, r)
		return
	}
	if route && msg == nil && readErr != errNoBody {
		refuseBody(w, readErr)
		return
	}
	if !known {
		h.unsupported(w, msg.rpcID(), version)
		return
	}
	switch {
	case route && msg != nil && msg.modern():
		h.stateless.ServeHTTP(w, r)
	case h.opts.Stateless:
		h.stateless.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), noPushKey{}, true)))
	case sid != "":
		h.serveSession(w, r, sid)
	case r.Method == http.MethodPost:
		h.newSession(w, r, msg.rpcID())
	default:
		// GET or DELETE without a session: go-sdk explains what is missing.
		h.stateful.ServeHTTP(w, r)
	}
}

// refuseBody answers a request whose body could not be read whole within
// go-sdk's bound, as go-sdk would.
func refuseBody(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, "cannot read the request body: "+err.Error(), http.StatusBadRequest)
}

// writeError writes a JSON-RPC error response answering id.
func writeError(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e})
	if err != nil {
		http.Error(w, e.Message, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

// unsupported answers a request whose MCP-Protocol-Version header names a
// revision this server does not speak, with the versions it does.
func (h *HTTPHandler) unsupported(w http.ResponseWriter, id jsonrpc.ID, version string) {
	supported := mcp.SupportedProtocolVersions()
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: supported, Requested: version})
	writeError(w, http.StatusBadRequest, id, &jsonrpc.Error{
		Code: mcp.CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("protocol version %q (MCP-Protocol-Version header) is not supported by this server; use one of %s",
			show(version), strings.Join(supported, ", ")),
		Data: data,
	})
}

// newSession serves a POST without a session id, normally an initialize,
// if the session cap allows one more session.
func (h *HTTPHandler) newSession(w http.ResponseWriter, r *http.Request, id jsonrpc.ID) {
	if !h.reserve() {
		h.mu.Lock()
		closed := h.closed
		h.mu.Unlock()
		if closed {
			writeError(w, http.StatusServiceUnavailable, id, &jsonrpc.Error{Code: CodeTooManySessions,
				Message: "this server is shutting down and opens no new session; reconnect to another replica or retry later"})
			return
		}
		w.Header().Set("Retry-After", "60")
		data, _ := json.Marshal(map[string]int{"maxSessions": h.opts.MaxSessions})
		writeError(w, http.StatusServiceUnavailable, id, &jsonrpc.Error{
			Code: CodeTooManySessions,
			Message: fmt.Sprintf("this server already holds its maximum of %d sessions (HTTPOptions.MaxSessions; skillport --max-sessions); "+
				"retry later, end unused sessions with DELETE, or use protocol %s, which needs no session", h.opts.MaxSessions, ModernProtocolVersion),
			Data: data,
		})
		return
	}
	h.stateful.ServeHTTP(w, r)
	h.open(r, w.Header().Get("Mcp-Session-Id"))
}

// reserve counts one more session if the cap allows it.
func (h *HTTPHandler) reserve() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	if h.opts.MaxSessions >= 0 && h.live+h.pending >= h.opts.MaxSessions {
		return false
	}
	h.pending++
	return true
}

// serveSession serves a request of an existing session; the session does
// not expire while a request or stream of it is open.
func (h *HTTPHandler) serveSession(w http.ResponseWriter, r *http.Request, id string) {
	s := h.acquire(id)
	h.stateful.ServeHTTP(w, r)
	if s != nil {
		h.release(id, s)
	}
}
