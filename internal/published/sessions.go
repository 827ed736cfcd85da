package published

import (
	"context"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionCallers remembers who each live session of an MCP server is
// (its [Caller], as of its latest request) and which change notifications
// it is owed, so that a notification reaches only the sessions whose
// caller can see the change: [SessionCallers.Owe] marks them,
// [SessionCallers.Hold] drops the notification for the others. The server
// uses one for resources under a [ViewSource]; a gateway re-publishing
// skills as prompts uses one for prompts. It is safe for concurrent use.
type SessionCallers struct {
	mcp     *mcp.Server
	mu      sync.Mutex
	m       map[*mcp.ServerSession]*sessionCaller
	pruneAt int
}

type sessionCaller struct {
	caller *Caller
	owed   map[string]bool // notification keys (see noteKey)
}

// NewSessionCallers returns an empty SessionCallers for the sessions of s.
func NewSessionCallers(s *mcp.Server) *SessionCallers {
	return &SessionCallers{mcp: s, m: map[*mcp.ServerSession]*sessionCaller{}}
}

// minPrune is the number of tracked sessions at which the map is first
// checked against the live sessions; it doubles with the live count, so
// tracking stays proportional to the sessions the MCP server has.
const minPrune = 64

// See records ss's caller, as of its latest request (call it from a
// receiving middleware). A session never seen is owed nothing.
func (sc *SessionCallers) See(ss *mcp.ServerSession, c *Caller) {
	sc.mu.Lock()
	if e := sc.m[ss]; e != nil {
		e.caller = c
		sc.mu.Unlock()
		return
	}
	sc.m[ss] = &sessionCaller{caller: c}
	prune := len(sc.m) > max(sc.pruneAt, minPrune)
	sc.mu.Unlock()
	if prune {
		sc.prune()
	}
}

// prune forgets sessions the MCP server no longer has (stateless HTTP
// requests each have one).
func (sc *SessionCallers) prune() {
	live := map[*mcp.ServerSession]bool{}
	for ss := range sc.mcp.Sessions() {
		live[ss] = true
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for ss := range sc.m {
		if !live[ss] {
			delete(sc.m, ss)
		}
	}
	sc.pruneAt = 2 * len(sc.m)
}

// Owe asks changed, once per distinct caller of the tracked sessions, which
// notifications a change earns that caller, and marks its sessions owed
// them. A notification is named by its method, or for
// notifications/resources/updated by the method, a space and the URI.
func (sc *SessionCallers) Owe(changed func(c *Caller) []string) {
	byKey := map[string][]string{}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, e := range sc.m {
		k := e.caller.Key()
		notes, ok := byKey[k]
		if !ok {
			notes = changed(e.caller)
			byKey[k] = notes
		}
		for _, n := range notes {
			if e.owed == nil {
				e.owed = map[string]bool{}
			}
			e.owed[n] = true
		}
	}
}

// noteKey names a notification as [SessionCallers.Owe] does.
func noteKey(method string, params mcp.Params) string {
	if p, ok := params.(*mcp.ResourceUpdatedNotificationParams); ok && method == "notifications/resources/updated" {
		return method + " " + p.URI
	}
	return method
}

// take reports whether ss is owed the notification, and marks it paid.
func (sc *SessionCallers) take(ss *mcp.ServerSession, key string) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e := sc.m[ss]
	if e == nil || !e.owed[key] {
		return false
	}
	delete(e.owed, key)
	return true
}

// Hold is a sending middleware that delivers the notifications named by
// methods only to sessions owed them; other messages pass.
func (sc *SessionCallers) Hold(methods ...string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if slices.Contains(methods, method) {
				if ss, ok := req.GetSession().(*mcp.ServerSession); ok && !sc.take(ss, noteKey(method, req.GetParams())) {
					return nil, nil
				}
			}
			return next(ctx, method, req)
		}
	}
}
