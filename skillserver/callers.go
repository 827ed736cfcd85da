package skillserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"

	"github.com/skillport/skillport/internal/published"
)

// ownedSnapshot is a caller's view of a [published.ViewSource], as the server
// answers from it: cursors issued from it carry the caller's fingerprint.
type ownedSnapshot struct {
	published.Snapshot
	owner string
}

// ownedBy returns snap marked as c's view (snap itself for an anonymous
// caller). The fingerprint is a hash, so a cursor (which clients can
// decode) never names the caller.
func ownedBy(snap published.Snapshot, c *Caller) published.Snapshot {
	k := c.Key()
	if k == "" {
		return snap
	}
	h := sha256.Sum256([]byte(k))
	return &ownedSnapshot{Snapshot: snap, owner: base64.RawURLEncoding.EncodeToString(h[:12])}
}

// cursorOwner is the fingerprint a cursor issued from snap carries: empty
// unless snap is a caller's view.
func cursorOwner(snap published.Snapshot) string {
	if o, ok := snap.(*ownedSnapshot); ok {
		return o.owner
	}
	return ""
}

const (
	notifyListChanged = "notifications/resources/list_changed"
	notifyUpdated     = "notifications/resources/updated"
)

// owe marks, for every tracked session, what of the change from old to
// snap its caller can see, and returns the subscribed URIs (among subs)
// that changed for at least one caller.
func (srv *Server) owe(vs published.ViewSource, old, snap published.Snapshot, subs []string) []string {
	changed := map[string]bool{}
	srv.views.Owe(func(c *Caller) []string {
		ov, oerr := vs.View(context.Background(), old, c)
		nv, nerr := vs.View(context.Background(), snap, c)
		if oerr != nil || nerr != nil || ov == nil || nv == nil {
			ov, nv = old, snap // as an anonymous caller is told
		}
		var notes []string
		if ov.ID() != nv.ID() {
			notes = append(notes, notifyListChanged)
		}
		for _, u := range subs {
			if fileChanged(ov, nv, u) {
				notes = append(notes, notifyUpdated+" "+u)
				changed[u] = true
			}
		}
		return notes
	})
	out := make([]string, 0, len(changed))
	for u := range changed {
		out = append(out, u)
	}
	return out
}

// fileChanged reports whether uri's content differs between two snapshots
// (appeared, vanished or changed).
func fileChanged(old, snap published.Snapshot, uri string) bool {
	of, nf := old.File(uri), snap.File(uri)
	if of == nil && nf == nil {
		return false
	}
	return of == nil || nf == nil || of.Digest != nf.Digest || of.Size != nf.Size
}
