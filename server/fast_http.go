package server

import (
	"bytes"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/wire"
)

// fastSession is what the thin read path knows of a session: go-sdk's
// session, to see that it is initialized and has not ended, and the user
// whose token opened it (go-sdk serves a session to that user only).
type fastSession struct {
	ss    *mcp.ServerSession
	user  string
	ended atomic.Bool
}

// track finds the go-sdk session an initialize just opened, for the thin
// read path, and notes when it ends (DELETE, expiry, Close).
func (h *HTTPHandler) track(r *http.Request, id string) *fastSession {
	if h.fast == nil || id == "" {
		return nil
	}
	for ss := range h.srv.Sessions() {
		if ss.ID() != id {
			continue
		}
		fs := &fastSession{ss: ss}
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			fs.user = ti.UserID
		}
		go func() {
			ss.Wait()
			fs.ended.Store(true)
		}()
		return fs
	}
	return nil
}

// serveFast answers a POST of one request of a thin-path method itself,
// with the response go-sdk would send, when go-sdk would serve it: a
// 2026-07-28 request (stateless) whose headers go-sdk accepts, or a
// request of a live, initialized session. It reports false, with the
// request as it came, for go-sdk to serve everything else.
func (h *HTTPHandler) serveFast(w http.ResponseWriter, r *http.Request) bool {
	version := r.Header.Get("MCP-Protocol-Version")
	sid := r.Header.Get("Mcp-Session-Id")
	supported := mcp.SupportedProtocolVersions()
	modern := version >= ModernProtocolVersion
	switch {
	case modern:
		if sid != "" || !slices.Contains(supported, version) {
			return false
		}
	case sid == "" || h.opts.Stateless:
		return false
	case version != "" && !slices.Contains(supported, version):
		return false
	}
	if !fastHeaders(r, h.opts.HostChecked) {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPeekBytes+1))
	// Whatever was read is put back: go-sdk reads the request as it came.
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) > maxPeekBytes {
		return false
	}
	req, ok := parseFast(body)
	if !ok {
		return false
	}
	v := fastView{token: auth.TokenInfoFromContext(r.Context())}
	if modern {
		// go-sdk's checks of the standard headers of 2026-07-28.
		if r.Header.Get("Mcp-Method") != req.method {
			return false
		}
		if req.method == "resources/read" {
			uri, ok := paramURI(req.params)
			if name := r.Header.Get("Mcp-Name"); !ok || name == "" || name != uri {
				return false
			}
		}
		v.version = version
	} else {
		s := h.enter(sid, v.token)
		if s == nil {
			return false
		}
		defer h.leave(sid, s)
		p := s.fast.ss.InitializeParams()
		if p == nil {
			return false
		}
		if p.Capabilities != nil {
			_, v.declared = p.Capabilities.Extensions[wire.ExtensionID]
		}
	}
	if req.method == "resources/read" && h.serveLargeRead(w, r, req, v) {
		return true
	}
	result, ok := h.fast.fastResult(r.Context(), req, v)
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
// open, requested by the user who opened it), counting the request as
// open so that the session does not expire under it.
func (h *HTTPHandler) enter(sid string, token *auth.TokenInfo) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[sid]
	if s == nil || s.fast == nil || s.fast.ended.Load() {
		return nil
	}
	if s.fast.user != "" && (token == nil || token.UserID != s.fast.user) {
		return nil
	}
	s.active++
	if s.timer != nil {
		s.timer.Stop()
	}
	return s
}

// leave ends what enter began.
func (h *HTTPHandler) leave(sid string, s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.active--
	if s.active == 0 && h.sessions[sid] == s {
		h.idle(sid, s)
	}
}

// fastHeaders reports whether go-sdk's handler would pass the request's
// headers on: Host (its DNS rebinding protection on loopback, unless
// hostChecked), Content-Type, Accept and no Last-Event-ID.
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

// paramURI returns params.uri when it is a string without escapes.
func paramURI(params []byte) (string, bool) {
	fs, err := jsonobj.Fields(params)
	if err != nil {
		return "", false
	}
	for _, f := range fs {
		if f.Key == "uri" {
			return plainString(f.Value)
		}
	}
	return "", false
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}
