package server

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Key identifies what a caller may see: its subject, scopes and groups,
// the latter two in sorted order. Two requests with the same key are
// answered from the same view; nil (anonymous) has the key "".
func (c *Caller) Key() string {
	if c == nil {
		return ""
	}
	scopes, groups := slices.Clone(c.Scopes), slices.Clone(c.Groups)
	slices.Sort(scopes)
	slices.Sort(groups)
	return "s:" + c.Subject + "\x00" + strings.Join(scopes, " ") + "\x00" + strings.Join(groups, " ")
}

// CallerSnapshot is a [Snapshot] that is one caller's view of a catalog,
// as a [ContextSource] that filters by caller hands out. List cursors
// issued from it are bound to that caller: another caller presenting one
// gets the same -32602 "stale cursor" answer as after a change of the
// catalog, so a cursor never carries one caller's listing to another.
type CallerSnapshot interface {
	Snapshot
	// Caller is whose view this is (nil for the anonymous one).
	Caller() *Caller
}

// ViewSource is a [ContextSource] that can say what one caller sees of a
// snapshot it handed to its OnChange callbacks. The server then tells each
// session only about changes its caller can see:
// notifications/resources/list_changed only when the caller's view changed,
// notifications/resources/updated only for a URI whose content changed in
// the caller's view. A session is never told that something it cannot see
// exists or changed. (Under a ViewSource, list_changed notifications of
// resources the application adds itself are filtered the same way.)
type ViewSource interface {
	ContextSource
	// View returns the part of snap (a snapshot passed to an OnChange
	// callback, or returned by Snapshot) that caller c may see.
	View(snap Snapshot, c *Caller) Snapshot
}

// cursorOwner is the fingerprint a cursor issued from snap carries: empty
// unless snap is a caller's view. It is a hash, so a cursor (which clients
// can decode) never names the caller.
func cursorOwner(snap Snapshot) string {
	cs, ok := snap.(CallerSnapshot)
	if !ok {
		return ""
	}
	k := cs.Caller().Key()
	if k == "" {
		return ""
	}
	h := sha256.Sum256([]byte(k))
	return base64.RawURLEncoding.EncodeToString(h[:12])
}

// sessionViews tracks, for a [ViewSource], who each live session's caller
// is and which change notifications it is owed.
type sessionViews struct {
	mu      sync.Mutex
	m       map[*mcp.ServerSession]*sessionView
	pruneAt int
}

type sessionView struct {
	caller *Caller
	lists  bool            // owed notifications/resources/list_changed
	uris   map[string]bool // owed notifications/resources/updated
}

// minPrune is the number of tracked sessions at which the map is first
// checked against the live sessions; it doubles with the live count, so
// tracking stays proportional to the sessions the MCP server has.
const minPrune = 64

// see records ss's caller, as of its latest request.
func (srv *Server) see(ss *mcp.ServerSession, c *Caller) {
	v := &srv.views
	v.mu.Lock()
	if v.m == nil {
		v.m = map[*mcp.ServerSession]*sessionView{}
	}
	if sv := v.m[ss]; sv != nil {
		sv.caller = c
		v.mu.Unlock()
		return
	}
	v.m[ss] = &sessionView{caller: c}
	prune := len(v.m) > max(v.pruneAt, minPrune)
	v.mu.Unlock()
	if prune {
		srv.pruneViews()
	}
}

// pruneViews forgets sessions the MCP server no longer has (stateless
// HTTP requests each have one).
func (srv *Server) pruneViews() {
	live := map[*mcp.ServerSession]bool{}
	for ss := range srv.mcp.Sessions() {
		live[ss] = true
	}
	v := &srv.views
	v.mu.Lock()
	defer v.mu.Unlock()
	for ss := range v.m {
		if !live[ss] {
			delete(v.m, ss)
		}
	}
	v.pruneAt = 2 * len(v.m)
}

// owe works out, for every tracked session, what of the change from old
// to snap its caller can see, and returns the subscribed URIs (among
// subs) that changed for at least one caller.
func (srv *Server) owe(vs ViewSource, old, snap Snapshot, subs []string) []string {
	type verdict struct {
		lists bool
		uris  []string
	}
	byKey := map[string]*verdict{}
	changed := map[string]bool{}
	v := &srv.views
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, sv := range v.m {
		k := sv.caller.Key()
		d := byKey[k]
		if d == nil {
			ov, nv := vs.View(old, sv.caller), vs.View(snap, sv.caller)
			d = &verdict{lists: ov.ID() != nv.ID()}
			for _, u := range subs {
				if fileChanged(ov, nv, u) {
					d.uris = append(d.uris, u)
					changed[u] = true
				}
			}
			byKey[k] = d
		}
		sv.lists = sv.lists || d.lists
		for _, u := range d.uris {
			if sv.uris == nil {
				sv.uris = map[string]bool{}
			}
			sv.uris[u] = true
		}
	}
	out := make([]string, 0, len(changed))
	for u := range changed {
		out = append(out, u)
	}
	return out
}

// fileChanged reports whether uri's content differs between two snapshots
// (appeared, vanished or changed).
func fileChanged(old, snap Snapshot, uri string) bool {
	of, nf := old.File(uri), snap.File(uri)
	if of == nil && nf == nil {
		return false
	}
	return of == nil || nf == nil || of.Digest != nf.Digest || of.Size != nf.Size
}

// take reports whether ss is owed the notification, and marks it paid.
func (srv *Server) take(ss *mcp.ServerSession, method string, params mcp.Params) bool {
	v := &srv.views
	v.mu.Lock()
	defer v.mu.Unlock()
	sv := v.m[ss]
	if sv == nil {
		return false // it never made a request: nothing to tell it about
	}
	switch method {
	case "notifications/resources/list_changed":
		owed := sv.lists
		sv.lists = false
		return owed
	case "notifications/resources/updated":
		p, ok := params.(*mcp.ResourceUpdatedNotificationParams)
		if !ok || !sv.uris[p.URI] {
			return false
		}
		delete(sv.uris, p.URI)
		return true
	}
	return true
}

// sending withholds from each session the change notifications about what
// its caller cannot see.
func (srv *Server) sending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "notifications/resources/list_changed", "notifications/resources/updated":
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && !srv.take(ss, method, req.GetParams()) {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}
