package skillserver

import (
	"context"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/wire"
)

// Show exposes how error messages render a URI.
var Show = show

// AddCapability exposes addCapability to tests.
var AddCapability = addCapability

// FastServed returns how many requests the thin read path answered.
func FastServed(srv *Server) int64 { return srv.fast.Load() }

// PendingNotes returns how many change notifications the connections of
// [Server.Transport] hold for clients that have not read them yet.
func PendingNotes(srv *Server) int {
	s := &srv.profiles().conns
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

// listFor is listAny for a client that declared the extension when
// declared reports so, and is known to lack it otherwise.
func (srv *Server) listFor(ctx context.Context, declared func() bool, p *wire.ListSkillsParams) (*listResponse, error) {
	caps := &mcp.ClientCapabilities{Extensions: map[string]any{}}
	if declared() {
		caps.Extensions[wire.ExtensionID] = map[string]any{}
	}
	return srv.listAny(ctx, &mcp.InitializeParams{Capabilities: caps}, p)
}

// WithoutProfiles runs fn with the compatibility profiles' hook
// unregistered, as if their files were deleted: servers created meanwhile
// serve the Skills Extension alone.
func WithoutProfiles(fn func()) {
	saved := newCompat
	newCompat = nil
	defer func() { newCompat = saved }()
	fn()
}

// WithoutProfile runs fn with one compatibility profile's registration line
// removed, as if it and its file were deleted.
func WithoutProfile(name Profile, fn func()) {
	saved := registered
	registered = slices.DeleteFunc(slices.Clone(registered), func(r registration) bool { return r.name == name })
	defer func() { registered = saved }()
	fn()
}

// BodyParses returns how many request bodies h has parsed.
func BodyParses(h *HTTPHandler) int64 { return h.parses.Load() }

// FromSkills exposes the adapter the server puts in front of a SkillSource.
var FromSkills = fromSkills
