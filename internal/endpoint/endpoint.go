// Package endpoint is the one HTTP composition every skillport server uses:
// it mounts an MCP handler at /mcp behind the limits that keep one client
// from costing the server more than a small, documented bound, and serves
// the operability endpoints /healthz, /readyz and /metrics next to it.
//
// The limits live here, in the shared HTTP path, rather than in each MCP
// method, so that a request costs the same bounded memory whatever its
// shape:
//
//   - a request body larger than [Options.MaxBodyBytes] is refused with
//     413 before it is buffered;
//   - JSON-RPC batches are refused with 400: protocol revisions from
//     2025-06-18 on have no batching, and one request per POST is what
//     keeps the answer to one POST bounded by the answer to one method;
//   - only HTTP/1.1 is served, so a connection has at most one response
//     in flight, and a write that makes no progress for
//     [Options.WriteTimeout] ends that connection alone: a client that does
//     not read its socket stalls only itself, while long-lived SSE streams
//     that are merely quiet are left open;
//   - a body that does not arrive within [Options.BodyTimeout], headers
//     that do not within [Options.ReadHeaderTimeout], and keep-alive
//     connections idle for [Options.IdleTimeout] are closed;
//   - at most [Options.MaxSessionPOSTs] POSTs of one session are handled at
//     once; the next gets 429;
//   - at most [Options.MaxConns] connections are open at once; at the cap
//     a new one takes the place of the connection idle the longest, and is
//     answered 503 and closed only when every connection is busy;
//   - large answers (file reads, archives) hold at most
//     [Options.ResponseBudget] bytes on all connections together, so that
//     clients that never read cannot multiply a response by MaxConns;
//   - on every route, a request whose Host is not a name of this server
//     (a loopback server answers localhost names and
//     [Options.AllowHosts]) gets 403, against DNS rebinding, and so does
//     one whose Origin header is present and not allowed (the MCP
//     transport requires servers to validate Origin).
package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skillport/skillport/internal/budget"
	"github.com/skillport/skillport/internal/published"
)

// Defaults for the zero values of [Options].
const (
	DefaultMaxBodyBytes      = 1 << 20 // 1 MiB: the largest MCP request a client sends is far smaller
	DefaultMaxBodyBuffer     = 64 << 20
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConns          = 1024
	DefaultMaxSessionPOSTs   = 16
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultWriteTimeout      = 30 * time.Second
	DefaultShutdownTimeout   = 5 * time.Second
	// DefaultResponseBudget is the bytes of large answers (file reads,
	// archives) held at once by the whole server.
	DefaultResponseBudget = budget.DefaultSize
)

// Options configures an [Endpoint]. The zero value of every field selects
// its default; a negative duration, MaxConns, MaxSessionPOSTs or
// MaxBodyBuffer turns that limit off.
type Options struct {
	// Path is where the MCP handler is mounted (default "/mcp").
	Path string
	// MaxBodyBytes caps the body of one request (default 1 MiB). It cannot
	// be turned off.
	MaxBodyBytes int64
	// MaxBodyBuffer caps the request bodies held at once, on all
	// connections together (default 64 MiB): a POST that would exceed it
	// while its body arrives gets 503.
	MaxBodyBuffer int64
	// MaxHeaderBytes caps the request line and headers (default 64 KiB).
	MaxHeaderBytes int
	// MaxConns caps the connections open at once (default 1024).
	MaxConns int
	// MaxSessionPOSTs caps the POSTs of one MCP session (by its
	// Mcp-Session-Id header) being handled at once (default 16): a client
	// cannot multiply its responses in flight by opening connections. The
	// count is kept in the MCP handler's session table (a handler with an
	// EnterSessionPOST method, as skillserver.HTTPHandler has); with any
	// other handler there is no per-session cap.
	MaxSessionPOSTs int
	// ReadHeaderTimeout bounds the time to receive the request headers.
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds the time to receive a request body, counted from
	// the end of its headers: slow-body clients are cut.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for this
	// long.
	IdleTimeout time.Duration
	// WriteTimeout bounds each write of a response, not the response: a
	// write the client does not take within it ends the connection, while
	// an SSE stream may stay open and quiet for as long as it lives.
	WriteTimeout time.Duration
	// ShutdownTimeout is how long [Endpoint.Serve] lets requests in flight
	// finish once its context ends (default 5 s).
	ShutdownTimeout time.Duration
	// ResponseBudget caps the bytes held by large answers being produced
	// and sent (a big file's resources/read), on all connections together
	// (default 64 MiB): a client that never reads holds its answer until
	// WriteTimeout cuts it, so a cap per connection would multiply by
	// MaxConns. A large answer waits up to 10 s for budget, then gets 503;
	// answers under 64 KiB are never held back. Every handler finds the
	// budget in its request's context.
	ResponseBudget int64

	// AllowOrigins lists the web origins (scheme://host[:port]) whose
	// requests are served. Requests without an Origin header, from the
	// server's own origin, and from a loopback origin when the request
	// arrived on a loopback address are always served.
	AllowOrigins []string
	// AllowHosts lists host names (e.g. skills.example.com) requests may
	// name in their Host header besides loopback names and IP addresses.
	// Every route applies one Host policy, against DNS rebinding: a
	// request that reached the server on a loopback address must name a
	// loopback host (localhost, 127.0.0.1, [::1]) or a listed one; on any
	// other address, when the list is set, a listed name or an IP address.
	// An MCP handler behind the endpoint should then leave the Host check
	// to it (for package server, [skillserver.HTTPOptions].HostChecked).
	AllowHosts []string

	// Source, when set, makes /readyz report whether it has a snapshot
	// (and, if it implements [Readier], whether its backend can be
	// reached), and /metrics report the snapshot's size and age. The
	// gauges count what Source.Snapshot returns: give the anonymous view
	// of a source filtered by caller, so that they reveal no hidden skill.
	Source published.Source
	// Ready, when set, is one more readiness check for /readyz, e.g. a
	// gateway that is still discovering its upstream servers.
	Ready func(context.Context) error
	// Sessions, when set, reports the MCP sessions held right now (for
	// example [skillserver.HTTPHandler.Sessions]); /metrics exposes it as
	// skillport_mcp_sessions_active.
	Sessions func() int

	// Registerer and Gatherer receive and expose the metrics. When both are
	// nil a new registry is used, with the Go runtime and process
	// collectors.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer

	// Logger receives one access-log line per request (at Info) and the
	// HTTP server's own errors. Nil means slog.Default().
	Logger *slog.Logger

	// Auth, when set, makes the MCP path an OAuth resource (and /metrics
	// needs a valid token too): each request
	// needs a valid bearer token (checked before its body is read), its
	// [skillserver.Caller] travels in the request context, and the Protected
	// Resource Metadata is served at /.well-known/oauth-protected-resource.
	Auth *Auth
}

// Readier is implemented by a [published.Source] that can say whether it is
// fit to serve: its backend reachable, or its last good snapshot still
// being served. /readyz reports the error it returns.
type Readier interface {
	Ready(context.Context) error
}

// Endpoint is the composed http.Handler. Serve it with [Endpoint.Serve],
// which also applies the connection limit and timeouts.
type Endpoint struct {
	opts     Options
	mux      *http.ServeMux
	mcp      http.Handler
	origins  map[string]bool
	hosts    map[string]bool
	m        *metrics
	log      *slog.Logger
	bodies   atomic.Int64 // bytes of request bodies held
	parses   atomic.Int64 // bodies parsed for the metrics label (TestParsesOnlyUnlabelled)
	budget   *budget.Budget
	idle     *idleConns
	sessions sessionTable // nil: the MCP handler keeps no session table
}

// sessionTable is the session table of an MCP handler that keeps one
// (skillserver.HTTPHandler): the endpoint counts a session's POSTs in it
// rather than in a table of its own.
type sessionTable interface {
	EnterSessionPOST(sid string, limit int) (leave func(), ok bool)
}

// New composes mcpHandler with the limits and operability endpoints
// configured by opts (which may be nil). It fails when an allowed origin
// is not of the form scheme://host[:port] or the metrics cannot be
// registered.
func New(mcpHandler http.Handler, opts *Options) (*Endpoint, error) {
	e := &Endpoint{mcp: mcpHandler, origins: map[string]bool{}, hosts: map[string]bool{}, idle: newIdleConns()}
	e.sessions, _ = mcpHandler.(sessionTable)
	if opts != nil {
		e.opts = *opts
	}
	o := &e.opts
	if o.MaxBodyBytes < 0 {
		return nil, errors.New("endpoint: MaxBodyBytes cannot be turned off")
	}
	defaults(&o.Path, "/mcp")
	defaults(&o.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults(&o.MaxBodyBuffer, DefaultMaxBodyBuffer)
	defaults(&o.MaxHeaderBytes, DefaultMaxHeaderBytes)
	defaults(&o.MaxConns, DefaultMaxConns)
	defaults(&o.MaxSessionPOSTs, DefaultMaxSessionPOSTs)
	defaults(&o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	defaults(&o.BodyTimeout, DefaultBodyTimeout)
	defaults(&o.IdleTimeout, DefaultIdleTimeout)
	defaults(&o.WriteTimeout, DefaultWriteTimeout)
	defaults(&o.ShutdownTimeout, DefaultShutdownTimeout)
	defaults(&o.ResponseBudget, DefaultResponseBudget)
	e.budget = budget.New(o.ResponseBudget, 0)
	for _, s := range o.AllowOrigins {
		n, err := ParseOrigin(s)
		if err != nil {
			return nil, fmt.Errorf("endpoint: allowed origin %q: %w", s, err)
		}
		e.origins[n] = true
	}
	for _, s := range o.AllowHosts {
		n, err := ParseHost(s)
		if err != nil {
			return nil, fmt.Errorf("endpoint: allowed host %q: %w", s, err)
		}
		e.hosts[n] = true
	}
	e.log = o.Logger
	if e.log == nil {
		e.log = slog.Default()
	}
	reg, gat := o.Registerer, o.Gatherer
	if reg == nil && gat == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg, gat = r, r
	}
	if reg == nil || gat == nil {
		return nil, errors.New("endpoint: set both Registerer and Gatherer, or neither")
	}
	m, err := newMetrics(reg, o.Source, o.Sessions, e.budget)
	if err != nil {
		return nil, fmt.Errorf("endpoint: registering metrics: %w", err)
	}
	e.m = m
	e.mux = http.NewServeMux()
	var mcp http.Handler = http.HandlerFunc(e.serveMCP)
	if o.Auth != nil {
		mcp = o.Auth.require(mcp)
		o.Auth.mount(e.mux)
	}
	e.mux.Handle(o.Path, mcp)
	e.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	e.mux.HandleFunc("GET /readyz", e.serveReady)
	var metricsH http.Handler = promhttp.HandlerFor(gat, promhttp.HandlerOpts{MaxRequestsInFlight: 2})
	if o.Auth != nil {
		// A server that asks a token for its skills asks one for their
		// counts too (see docs/visibility.md).
		metricsH = o.Auth.require(metricsH)
	}
	e.mux.Handle("GET /metrics", metricsH)
	return e, nil
}

func defaults[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Handle mounts h at pattern (as http.ServeMux patterns) next to the MCP
// handler, for the other parts of a server (a registry API, a web
// catalog). Its requests get the Origin check, the connection limit, the
// timeouts, the metrics and the access log; bodies are h's to bound (the
// JSON-RPC body cap and batch refusal apply to the MCP path only). Call it
// before serving.
func (e *Endpoint) Handle(pattern string, h http.Handler) { e.mux.Handle(pattern, h) }

// Options returns the options in effect, defaults filled in.
func (e *Endpoint) Options() Options { return e.opts }

// ServeHTTP checks the Host and the Origin, then routes the request; every
// request is counted and logged once.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// Every handler, whatever its route, charges the same budget.
	r = r.WithContext(budget.WithContext(r.Context(), e.budget))
	rec := e.track(w)
	if r.ContentLength != 0 && e.opts.BodyTimeout > 0 {
		// Every route, not only the MCP one: the server reads what a
		// handler left of a body before the next request, and a slow client
		// must not hold the connection there either.
		rec.rc.SetReadDeadline(time.Now().Add(e.opts.BodyTimeout))
	}
	e.m.inFlight.Inc()
	defer func() {
		e.m.inFlight.Dec()
		rec.done()
		e.observe(r, rec, time.Since(start))
	}()
	if host, ok := e.hostAllowed(r); !ok {
		rec.refused = "host"
		writeError(rec, http.StatusForbidden, fmt.Sprintf("Host %q is not a name of this server (refused against DNS rebinding): a server reached on a loopback address answers localhost names only; start it with --allow-host %s to serve that name", r.Host, host))
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !e.originAllowed(r, origin) {
			rec.refused = "origin"
			writeError(rec, http.StatusForbidden, fmt.Sprintf("Origin %q is not allowed to use this server; start it with --allow-origin %s to allow that web page", origin, origin))
			return
		}
		if cors(rec, r, origin) {
			return
		}
	}
	e.mux.ServeHTTP(rec, r)
}

// Serve serves e on ln until ctx ends, then shuts down gracefully: requests
// in flight get ShutdownTimeout to finish. ln is wrapped to apply
// MaxConns. It returns nil after a shutdown, or the error that stopped the
// server.
func (e *Endpoint) Serve(ctx context.Context, ln net.Listener) error {
	hs := e.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(e.Listener(ln)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), e.opts.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	return nil
}

// HTTPServer returns an http.Server for e with the header, idle and
// header-size limits set. The body and write timeouts are applied per
// request by e itself, and the connection limit by [Endpoint.Listener].
func (e *Endpoint) HTTPServer() *http.Server {
	hs := &http.Server{
		Handler:           e,
		ReadHeaderTimeout: positive(e.opts.ReadHeaderTimeout),
		IdleTimeout:       positive(e.opts.IdleTimeout),
		MaxHeaderBytes:    e.opts.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
		ConnState:         e.connState,
		// ReadTimeout and WriteTimeout stay zero: as connection deadlines
		// they would cancel long-lived SSE streams. BodyTimeout and
		// WriteTimeout are applied per request instead.
	}
	// HTTP/1.1 only: one request, hence one response, in flight per
	// connection.
	hs.Protocols = new(http.Protocols)
	hs.Protocols.SetHTTP1(true)
	return hs
}

func positive(d time.Duration) time.Duration { return max(d, 0) }

// serveReady answers 200 when the source has a snapshot and every
// readiness check passes, else 503 naming what is not ready.
func (e *Endpoint) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := e.ready(ctx); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	io.WriteString(w, "ready\n")
}

func (e *Endpoint) ready(ctx context.Context) error {
	if src := e.opts.Source; src != nil {
		if src.Snapshot() == nil {
			return errors.New("the source has no snapshot yet")
		}
		if rd, ok := src.(Readier); ok {
			if err := rd.Ready(ctx); err != nil {
				return fmt.Errorf("source: %w", err)
			}
		}
	}
	if e.opts.Ready != nil {
		return e.opts.Ready(ctx)
	}
	return nil
}
