package skillserver

// Show exposes how error messages render a URI.
var Show = show

// AddCapability exposes addCapability to tests.
var AddCapability = addCapability

// FastServed returns how many requests the thin read path answered.
func FastServed(srv *Server) int64 { return srv.fast.Load() }

// PendingNotes returns how many change notifications the connections of
// [Server.Transport] hold for clients that have not read them yet.
func PendingNotes(srv *Server) int {
	s := &srv.legacyConns
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		n += c.out.pendingNotes()
	}
	return n
}

// SessionTable returns the ids in h's session table, ended ones whose
// last request is still in progress included.
func SessionTable(h *HTTPHandler) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for id := range h.sessions {
		ids = append(ids, id)
	}
	return ids
}
