package endpoint

import (
	"bytes"
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// serveMCP reads a POST body within the body limits, refuses batches, and
// hands the buffered request to the MCP handler.
func (e *Endpoint) serveMCP(w http.ResponseWriter, r *http.Request) {
	rec := w.(*recorder)
	if r.Method != http.MethodPost {
		e.mcp.ServeHTTP(w, r)
		return
	}
	limit := e.opts.MaxBodyBytes
	tooLarge := func() {
		rec.refused = "body_too_large"
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds this server's limit of %d bytes; send one smaller JSON-RPC message per POST", limit))
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && e.opts.MaxSessionPOSTs > 0 && e.sessions != nil {
		leave, ok := e.sessions.EnterSessionPOST(sid, e.opts.MaxSessionPOSTs)
		if !ok {
			rec.refused = "session_requests"
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, fmt.Sprintf("this session already has %d requests in flight, the server's limit; wait for an answer before sending more", e.opts.MaxSessionPOSTs))
			return
		}
		defer leave()
	}
	rc := rec.rc
	if r.ContentLength > limit {
		// Expire the read deadline so that the server does not wait for the
		// body before closing the connection.
		rc.SetReadDeadline(time.Now())
		tooLarge()
		return
	}
	// ServeHTTP set the BodyTimeout deadline.
	body, held, err := e.readBody(http.MaxBytesReader(rec.ResponseWriter, r.Body, limit), r.ContentLength)
	defer e.bodies.Add(-held)
	rec.bytesIn = int64(len(body))
	if err != nil {
		rc.SetReadDeadline(time.Now())
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			tooLarge()
		case errors.Is(err, errBusy):
			rec.refused = "body_budget"
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("the server is holding %d bytes of request bodies, its limit; retry shortly", e.opts.MaxBodyBuffer))
		case errors.Is(err, os.ErrDeadlineExceeded):
			rec.refused = "slow_body"
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %s; the connection is closed", e.opts.BodyTimeout))
		default:
			rec.refused = "body_read"
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return
	}
	// Once the body is in, nothing more is read but the next request, which
	// ReadHeaderTimeout and IdleTimeout bound; a deadline left here would
	// cancel a long-lived response stream.
	rc.SetReadDeadline(time.Time{})
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		rec.refused = "batch"
		writeError(w, http.StatusBadRequest, "JSON-RPC batches are not accepted: send one message per POST (protocol revisions from 2025-06-18 on have no batching)")
		return
	}
	r.Body = &bufferedBody{Reader: bytes.NewReader(body), data: body}
	r.ContentLength = int64(len(body))
	e.mcp.ServeHTTP(w, r)
	if !rec.labeled {
		// The handler did not say which method it served (it is not
		// package skillserver's): read it here, the one parse of the body
		// on this endpoint's side.
		e.parses.Add(1)
		var head struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &head) == nil {
			rec.rpcMethod = methodLabel(head.Method)
		}
	}
}

// bufferedBody is a request body the endpoint read whole. Package
// server's handler takes its bytes (Buffered) rather than reading and
// copying them again: one read of a body per request.
type bufferedBody struct {
	*bytes.Reader
	data []byte
}

func (b *bufferedBody) Close() error { return nil }

// Buffered returns the whole body.
func (b *bufferedBody) Buffered() []byte { return b.data }

// SetRPCMethod records the JSON-RPC method of the request as the MCP
// handler (package skillserver's) parsed it, or that the body is not a
// JSON-RPC message it could parse (parsed false), sparing the endpoint a
// parse of the body for its metrics label.
func (w *recorder) SetRPCMethod(m string, parsed bool) {
	w.rpcMethod, w.labeled = "none", true
	if parsed {
		w.rpcMethod = methodLabel(m)
	}
}

var errBusy = errors.New("request body budget exhausted")

// readBody reads a request body whose declared length is n (-1 when
// unknown), charging the memory it holds to the endpoint's MaxBodyBuffer
// as it grows, so that bodies on every connection together stay within
// it. It returns what it charged, to be given back when the request is
// done.
func (e *Endpoint) readBody(r io.Reader, n int64) (body []byte, held int64, err error) {
	grow := func(size int64) error {
		if e.bodies.Add(size) > e.opts.MaxBodyBuffer && e.opts.MaxBodyBuffer > 0 {
			e.bodies.Add(-size)
			return errBusy
		}
		held += size
		return nil
	}
	size := int64(4 << 10)
	if n >= 0 {
		size = n + 1 // +1 to read the EOF without growing
	}
	if err := grow(size); err != nil {
		return nil, held, err
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			more := int64(cap(buf))
			if err := grow(more); err != nil {
				return nil, held, err
			}
			buf = slices.Grow(buf, int(more))
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf, held, nil
		}
		if err != nil {
			return nil, held, err
		}
	}
}

// writeError writes a JSON-RPC error response (id null: the request was
// not read as JSON-RPC) with the given HTTP status.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeErrorID(w, status, jsonrpc.ID{}, msg)
}

// maxIDPeek bounds the body read to answer a refused request with its id.
const maxIDPeek = 64 << 10

// requestID returns the JSON-RPC id of a request refused before its body
// was read (an unauthenticated one): read when the body is small (at most
// maxIDPeek, within the body timeout already set), else the null id.
func requestID(r *http.Request) jsonrpc.ID {
	if r.Method != http.MethodPost || r.Body == nil || r.ContentLength <= 0 || r.ContentLength > maxIDPeek {
		return jsonrpc.ID{}
	}
	// The request is refused here and goes no further: this is its one
	// parse.
	body, err := io.ReadAll(io.LimitReader(r.Body, maxIDPeek))
	if err != nil {
		return jsonrpc.ID{}
	}
	var msg struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(msg.ID)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

// writeErrorID writes a JSON-RPC error response answering id with the
// given HTTP status. An unknown id is written null, as JSON-RPC 2.0 asks
// (go-sdk's encoder leaves it out).
func writeErrorID(w http.ResponseWriter, status int, id jsonrpc.ID, msg string) {
	data, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id.Raw(), &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg}})
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

// originAllowed reports whether a request carrying this Origin is served:
// its own origin, a listed one, or a loopback origin reaching the server
// on a loopback address (a web page cannot take a loopback origin, and
// the MCP handler already refuses loopback requests naming a foreign
// Host).
func (e *Endpoint) originAllowed(r *http.Request, origin string) bool {
	n, err := ParseOrigin(origin)
	if err != nil {
		return false
	}
	if e.origins[n] {
		return true
	}
	u, _ := url.Parse(n)
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return isLoopback(u.Hostname()) && onLoopback(r)
}

// cors lets a web page of an allowed origin read the responses: it sets the
// CORS response headers and answers a preflight itself, reporting whether
// it did.
func cors(w http.ResponseWriter, r *http.Request, origin string) (answered bool) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Accept, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// ParseOrigin returns the web origin s as [Options.AllowOrigins] compares
// it (scheme://host[:port] in lower case, without a default port), or an
// error saying why s is not an origin; a CLI checks its flags with it
// before starting.
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New("want http:// or https://, e.g. https://app.example.com")
	case u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", errors.New("want scheme://host[:port] and nothing more")
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// hostAllowed applies the Host policy of [Options.AllowHosts] to r,
// returning the host name it named.
func (e *Endpoint) hostAllowed(r *http.Request) (string, bool) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	switch {
	case isLoopback(host) || e.hosts[host]:
		return host, true
	case onLoopback(r):
		return host, false
	}
	return host, len(e.hosts) == 0 || net.ParseIP(host) != nil
}

// onLoopback reports whether r reached the server on a loopback address.
func onLoopback(r *http.Request) bool {
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	host, _, err := net.SplitHostPort(la.String())
	return err == nil && isLoopback(host)
}

// ParseHost returns the host name s as [Options.AllowHosts] compares it
// (lower case, without a port), or an error saying why s is not a host
// name; a CLI checks its flags with it before starting.
func ParseHost(s string) (string, error) {
	bad := errors.New("want a host name such as skills.example.com, without scheme, path or wildcard")
	h := strings.ToLower(strings.TrimSpace(s))
	// A host name holds no space or control character anywhere: one left
	// inside would make the result differ from what it parses as.
	if strings.ContainsAny(h, "/@?#*\\ ") || strings.ContainsFunc(h, func(r rune) bool { return r < ' ' || r == 0x7f || unicode.IsSpace(r) }) {
		return "", bad
	}
	if hp, _, err := net.SplitHostPort(h); err == nil {
		h = hp
	}
	// Brackets only around an IPv6 literal, as a pair.
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if h == "" || strings.ContainsAny(h, "[]") || (strings.Contains(h, ":") && net.ParseIP(h) == nil) {
		return "", bad
	}
	return h, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// recorder observes a response for the metrics and access log, and gives
// each write WriteTimeout to complete: a client that does not read is cut
// off, a stream that is merely quiet is not.
type recorder struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration

	status    int
	bytesIn   int64
	bytesOut  int64
	prefix    []byte // the response's first bytes, to tell JSON-RPC errors
	rpcMethod string
	labeled   bool   // the MCP handler set rpcMethod (SetRPCMethod)
	refused   string // why the endpoint refused the request, if it did
}

const prefixLen = 256

func (e *Endpoint) track(w http.ResponseWriter) *recorder {
	return &recorder{ResponseWriter: w, rc: http.NewResponseController(w), timeout: e.opts.WriteTimeout, rpcMethod: "none"}
}

func (w *recorder) arm() {
	if w.timeout > 0 {
		w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if len(w.prefix) < prefixLen {
		w.prefix = append(w.prefix, p[:min(len(p), prefixLen-len(w.prefix))]...)
	}
	w.arm()
	n, err := w.ResponseWriter.Write(p)
	w.bytesOut += int64(n)
	return n, err
}

// FlushError lets http.ResponseController (which go-sdk uses) flush
// through the recorder under the write deadline.
func (w *recorder) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

// Flush implements http.Flusher.
func (w *recorder) Flush() { w.FlushError() }

// Unwrap gives http.ResponseController the underlying writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// done gives the server's final flush of the response its own deadline.
func (w *recorder) done() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.arm()
}

// result classifies the response for the metrics.
func (w *recorder) result() string {
	switch {
	case w.refused != "":
		return "refused"
	case w.status >= 500:
		return "server_error"
	case w.status >= 400:
		return "client_error"
	case bytes.Contains(w.prefix, []byte(`"error":{"code":`)):
		return "rpc_error"
	}
	return "ok"
}

// limitListener accepts at most max connections at once. At the cap, a
// new connection takes the place of the connection idle the longest (a
// keep-alive connection between requests, or one that has sent nothing
// for a second); when none is idle, it is answered 503 with a JSON-RPC
// error naming the limit and closed. An idle connection costs its client
// nothing to keep, so without yielding, a client that opens MaxConns of
// them and waits locks everyone out for the whole IdleTimeout.
type limitListener struct {
	net.Listener
	sem      chan struct{}
	refusing chan struct{} // bounds the goroutines answering refusals
	refused  func()
	evicted  func()
	open     func(delta float64)
	idle     *idleConns
}

// Listener wraps ln to apply MaxConns and count open connections;
// [Endpoint.Serve] uses it. The http.Server serving it must be the one
// [Endpoint.HTTPServer] returns, whose ConnState tells the listener which
// connections are idle.
func (e *Endpoint) Listener(ln net.Listener) net.Listener {
	l := &limitListener{Listener: ln, refusing: make(chan struct{}, 64),
		refused: func() { e.m.refused.WithLabelValues("connection_limit").Inc() },
		evicted: func() { e.m.refused.WithLabelValues("idle_yielded").Inc() },
		open:    e.m.conns.Add, idle: e.idle}
	if e.opts.MaxConns > 0 {
		l.sem = make(chan struct{}, e.opts.MaxConns)
	}
	return l
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.sem != nil && !l.enter() {
			l.refused()
			l.refuse(c)
			continue
		}
		l.open(1)
		cc := &countedConn{Conn: c}
		cc.release = func() {
			l.idle.forget(cc)
			l.open(-1)
			if l.sem != nil {
				<-l.sem
			}
		}
		l.idle.set(cc, http.StateNew)
		return cc, nil
	}
}

// enter takes a place under the cap, closing the longest-idle connection
// when there is none free; it reports false when every connection is
// busy.
func (l *limitListener) enter() bool {
	for {
		select {
		case l.sem <- struct{}{}:
			return true
		default:
		}
		victim := l.idle.oldest(time.Now())
		if victim == nil {
			return false
		}
		// Closing releases its place before Close returns.
		victim.Close()
		l.evicted()
	}
}

// newGrace is how long a new connection may send nothing before it counts
// as idle: a client connects and sends its request at once.
const newGrace = time.Second

// idleConns tracks the connections with no request in progress, oldest
// first: keep-alive connections between requests, and new connections
// that have not yet sent one. http.Server.ConnState feeds it.
type idleConns struct {
	mu    sync.Mutex
	conns *list.List // of *countedConn, by the time they became idle
}

func newIdleConns() *idleConns { return &idleConns{conns: list.New()} }

// set records the state http.Server reports for c.
func (s *idleConns) set(c *countedConn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.elem != nil {
		s.conns.Remove(c.elem)
		c.elem = nil
	}
	if state == http.StateNew || state == http.StateIdle {
		c.since, c.fresh = time.Now(), state == http.StateNew
		c.elem = s.conns.PushBack(c)
	}
}

func (s *idleConns) forget(c *countedConn) { s.set(c, http.StateClosed) }

// oldest removes and returns the connection idle the longest, or nil when
// none is: a new connection counts after newGrace only.
func (s *idleConns) oldest(now time.Time) *countedConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.conns.Front(); e != nil; e = e.Next() {
		c := e.Value.(*countedConn)
		if c.fresh && now.Sub(c.since) < newGrace {
			continue
		}
		s.conns.Remove(e)
		c.elem = nil
		return c
	}
	return nil
}

// connState is the http.Server.ConnState of an endpoint's server.
func (e *Endpoint) connState(c net.Conn, state http.ConnState) {
	if cc, ok := c.(*countedConn); ok {
		e.idle.set(cc, state)
	}
}

var connLimitResponse = func() []byte {
	msg := "this server is at its limit of concurrent connections; retry later or raise the limit"
	body, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}})
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%s", len(body), body)
}()

// refuse answers c with 503 and closes it, in the background and within a
// second; when too many refusals are under way, it just closes c.
func (l *limitListener) refuse(c net.Conn) {
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		c.Write(connLimitResponse)
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		}
		// Read what the client sent, so that closing does not reset the
		// connection before it reads the answer.
		io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

type countedConn struct {
	net.Conn
	once    sync.Once
	release func()

	// Guarded by idleConns.mu.
	elem  *list.Element // in idle.conns while idle
	since time.Time     // when it became idle
	fresh bool          // idle because it has not sent a request yet
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
