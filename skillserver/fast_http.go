package skillserver

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkCompat reports whether go-sdk runs with a compatibility setting
// (MCPGODEBUG, read once at start as go-sdk reads it): some change what
// its stateless mode answers (allowsessionsinstateless), so the thin path
// then leaves stateless requests of older revisions to go-sdk.
var sdkCompat = os.Getenv("MCPGODEBUG") != ""

// readMessage reads the body of r once (bounded as go-sdk bounds it),
// puts the bytes back for go-sdk and parses them once: the thin path, the
// budget's charge, routing and the endpoint's metrics label all work from
// the result. It returns an error, with r.Body yielding the body as it
// came, when the body cannot be read whole within the bound: go-sdk, or
// routing, then says why.
func (h *HTTPHandler) readMessage(r *http.Request) (*message, error) {
	if r.Body == nil {
		return nil, errNoBody
	}
	var body []byte
	var err error
	if b, ok := r.Body.(interface{ Buffered() []byte }); ok {
		// Package endpoint read the body whole already; r.Body is left
		// unread for go-sdk, which refuses one beyond its bound.
		if body = b.Buffered(); len(body) > maxPeekBytes {
			return nil, &http.MaxBytesError{Limit: maxPeekBytes}
		}
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, maxPeekBytes+1))
		if err == nil && len(body) > maxPeekBytes {
			err = &http.MaxBytesError{Limit: maxPeekBytes}
		}
		if err != nil {
			r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
			return nil, err
		}
		r.Body = readCloser{bytes.NewReader(body), r.Body}
	}
	m := &message{}
	m.parse(body)
	h.parses.Add(1)
	return m, nil
}

// errNoBody is readMessage's answer for a request without a body.
var errNoBody = errors.New("no request body")

// serveFast answers a POST of one request of a thin-path method itself,
// with the response go-sdk would send, when go-sdk would serve it: a
// 2026-07-28 request (stateless) whose headers go-sdk accepts, an older
// revision's request to a stateless server (go-sdk serves it as if its
// client had initialized with no capabilities), or a request of a live,
// initialized session. It reports false for go-sdk to serve everything
// else, from the same bytes.
func (h *HTTPHandler) serveFast(w http.ResponseWriter, r *http.Request, m *message) bool {
	if !m.fastOK {
		return false
	}
	req := m.req
	version := r.Header.Get("MCP-Protocol-Version")
	sid := r.Header.Get("Mcp-Session-Id")
	supported := mcp.SupportedProtocolVersions()
	v := fastView{token: auth.TokenInfoFromContext(r.Context()), metas: &h.metas}
	switch {
	case version >= ModernProtocolVersion:
		if sid != "" || !slices.Contains(supported, version) {
			return false
		}
		v.version = version
	case version != "" && !slices.Contains(supported, version):
		return false
	case h.opts.Stateless:
		// go-sdk ignores a session id here unless a compatibility
		// setting says otherwise; a client of a stateless server has
		// none to send.
		if sid != "" || sdkCompat {
			return false
		}
		pv := version
		if pv == "" {
			pv = sdkDefaultVersion
		}
		v.init = &mcp.InitializeParams{ProtocolVersion: pv}
	case sid == "":
		return false
	}
	if !fastHeaders(r, h.opts.HostChecked) {
		return false
	}
	if v.version != "" && r.Header.Get("Mcp-Method") != req.method {
		return false // go-sdk's check of the 2026-07-28 method header
	}
	if v.version == "" && v.init == nil {
		s := h.enter(sid, v.token)
		if s == nil {
			return false
		}
		defer h.release(sid, s)
		if v.init = s.ss.InitializeParams(); v.init == nil {
			return false
		}
	}
	p, ok := readParams(m, v)
	if !ok {
		return false
	}
	if v.version != "" && req.method == "resources/read" {
		// go-sdk's check of the 2026-07-28 name header.
		if name := r.Header.Get("Mcp-Name"); name == "" || name != p.uri {
			return false
		}
	}
	if req.method == "resources/read" && h.serveLargeRead(w, r, req, p, v) {
		return true
	}
	result, ok := h.fast.fastResult(r.Context(), req.method, p, v)
	if !ok {
		return false
	}
	buf := framePool.Get().(*[]byte)
	defer putFrame(buf)
	frame := appendMessage((*buf)[:0], "event: message\ndata: ", req.id, result, "\n\n")
	*buf = frame
	hd := w.Header()
	hd.Set("Cache-Control", "no-cache, no-transform")
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Connection", "keep-alive")
	// The whole stream is known: sent with its length, in one write,
	// rather than flushed as go-sdk flushes an open stream.
	hd.Set("Content-Length", strconv.Itoa(len(frame)))
	w.WriteHeader(http.StatusOK)
	w.Write(frame)
	return true
}

// sdkDefaultVersion is the revision go-sdk assumes for a request without
// an MCP-Protocol-Version header.
const sdkDefaultVersion = "2025-03-26"

// framePool holds the buffers responses of the thin path are assembled
// in. A skills/list page is tens of KiB: a fresh buffer per response was
// most of what the path allocated, and so most of the garbage collector's
// work.
var framePool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledFrame bounds a buffer kept in framePool: a rare large response
// (a big file read) is left to the collector rather than kept for good.
const maxPooledFrame = 256 << 10

// putFrame returns a buffer to framePool once its response is written.
func putFrame(b *[]byte) {
	if cap(*b) <= maxPooledFrame {
		framePool.Put(b)
	}
}

// enter returns the session sid when the thin path may serve it (known,
// open, requested by the user who opened it, as go-sdk's lookupSession
// requires), counting the request as in progress (acquire) so that the
// session does not expire under it; release ends it.
func (h *HTTPHandler) enter(sid string, token *auth.TokenInfo) *session {
	s := h.acquire(sid)
	if s == nil {
		return nil
	}
	if s.ended || (s.user != "" && (token == nil || token.UserID != s.user)) {
		h.release(sid, s)
		return nil
	}
	return s
}

// fastHeaders reports whether go-sdk's handler would pass the request's
// headers on: Host (its DNS rebinding protection on loopback, unless
// hostChecked: the endpoint in front applied its own Host policy),
// Content-Type, Accept and no Last-Event-ID.
//
// go-sdk v1.8.0 exports none of these checks (streamableAccepts and
// baseMediaType are unexported, IsLoopback is in its internal/util), nor
// the session ownership check of enter: this file holds the one copy of
// each, and TestFastPathMatchesSDK's header variants keep them in step
// with go-sdk's answers.
func fastHeaders(r *http.Request, hostChecked bool) bool {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil && !hostChecked {
		if isLoopback(local.String()) && !isLoopback(r.Host) {
			return false
		}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	if len(r.Header.Values("Last-Event-ID")) > 0 {
		return false
	}
	jsonOK, streamOK := false, false
	for _, value := range r.Header.Values("Accept") {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// isLoopback reports whether a host or host:port names the loopback
// interface, as go-sdk decides it.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// rpcLabeler is the ResponseWriter of package endpoint, which labels its
// metrics with the request's JSON-RPC method: told it (parsed false: the
// body is not one JSON object), it does not parse the body itself.
type rpcLabeler interface {
	SetRPCMethod(method string, parsed bool)
}

// labelMethod tells w, when it labels its metrics, the method of m (nil:
// a body not read whole).
func labelMethod(w http.ResponseWriter, m *message) {
	if l, ok := w.(rpcLabeler); ok {
		if m == nil {
			l.SetRPCMethod("", false)
		} else {
			l.SetRPCMethod(m.method, m.parsed)
		}
	}
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}
