package skillserver

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The session table of [HTTPHandler]: one entry per session of an older
// protocol revision, beside go-sdk's own.
//
// go-sdk's StreamableHTTPHandler keeps a map of its sessions that must
// stay: it holds each session's transport and streams, routes every
// request of the session, and go-sdk exports neither it nor a lookup by
// id. Its own idle timeout counts POSTs only, so it would close a session
// whose client listens on its GET stream. This table is the only other
// one (package endpoint keeps none: it asks this one, [HTTPHandler.EnterSessionPOST]).
// Its entry of a session
//   - expires the session after SessionTimeout with no request and no
//     stream open, by closing go-sdk's session (go-sdk then drops its own
//     entry);
//   - counts towards MaxSessions;
//   - gives the thin read path go-sdk's session of an id (its initialize
//     params) and the user who opened it, without a scan of go-sdk's;
//   - caps the POSTs of the session in flight, for package endpoint.
//
// The entry goes as soon as go-sdk's session ends, however it ends (DELETE,
// go-sdk's Close, expiry, [HTTPHandler.Close]), or never appears when the
// initialize failed. TestHTTPSessionTableOne checks each way.
type session struct {
	ss     *mcp.ServerSession
	user   string      // the user whose token opened it: go-sdk serves it to that user only
	active int         // requests and streams in progress
	posts  int         // POSTs in progress (EnterSessionPOST)
	timer  *time.Timer // fires SessionTimeout after the last one ended
	ended  bool        // go-sdk's session ended; the entry goes once nothing is in progress
}

// open adds the session an initialize just opened (its id, from the
// response's header) to the table, if go-sdk still holds it: a failed
// initialize has been closed by go-sdk already. h.pending is released.
func (h *HTTPHandler) open(r *http.Request, id string) {
	var ss *mcp.ServerSession
	if id != "" {
		for s := range h.srv.Sessions() {
			if s.ID() == id {
				ss = s
				break
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending--
	if ss == nil {
		return
	}
	if h.closed {
		// Opened while Close ran: closed too, as Close would have.
		go ss.Close()
		return
	}
	s := &session{ss: ss}
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		s.user = ti.UserID
	}
	h.sessions[id] = s
	h.live++
	h.idle(id, s)
	go func() {
		ss.Wait()
		h.end(id, s)
	}()
}

// end notes that go-sdk's session s ended, dropping its entry unless a
// request of it is still in progress (release drops it then).
func (h *HTTPHandler) end(id string, s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[id] != s || s.ended {
		return
	}
	s.ended = true
	h.live--
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.active == 0 {
		delete(h.sessions, id)
	}
}

// acquire counts one more request or stream of session id in progress,
// so that it does not expire meanwhile, and returns its entry; nil when
// the table has none.
func (h *HTTPHandler) acquire(id string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil {
		return nil
	}
	s.active++
	if s.timer != nil {
		s.timer.Stop()
	}
	return s
}

// release ends what acquire began.
func (h *HTTPHandler) release(id string, s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.active--
	if s.active > 0 || h.sessions[id] != s {
		return
	}
	if s.ended {
		delete(h.sessions, id)
		return
	}
	h.idle(id, s)
}

// idle starts the expiry clock of a session with nothing open; h.mu is held.
func (h *HTTPHandler) idle(id string, s *session) {
	if h.opts.SessionTimeout < 0 {
		return
	}
	if s.timer != nil {
		s.timer.Reset(h.opts.SessionTimeout)
		return
	}
	s.timer = time.AfterFunc(h.opts.SessionTimeout, func() { h.expire(id, s) })
}

// expire closes a session that stayed idle for SessionTimeout; go-sdk
// then drops its entry, and end this one.
func (h *HTTPHandler) expire(id string, s *session) {
	h.mu.Lock()
	ok := h.sessions[id] == s && s.active == 0 && !s.ended
	h.mu.Unlock()
	if ok {
		s.ss.Close()
	}
}

// EnterSessionPOST counts one more POST of session sid in progress,
// unless limit are already; leave ends it. Package endpoint caps the POSTs
// of a session with it (its MaxSessionPOSTs), so that the count lives in
// this one table. A POST naming no session this handler holds is let
// through: go-sdk answers it 404 at once.
func (h *HTTPHandler) EnterSessionPOST(sid string, limit int) (leave func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[sid]
	if s == nil || s.ended {
		return func() {}, true
	}
	if s.posts >= limit {
		return nil, false
	}
	s.posts++
	return func() {
		h.mu.Lock()
		s.posts--
		h.mu.Unlock()
	}, true
}
