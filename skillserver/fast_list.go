package skillserver

import "github.com/skillport/skillport/internal/published"

// supersetFirst returns the encoded first skills/list page of legacy
// (SEP-2076 superset) entries of snap, as [listResponse.MarshalJSON]
// writes it without _meta, when it is kept; nil otherwise. The superset
// goes to every client that does not declare the extension (go-sdk's
// default client among them) and its first page is what nearly all of
// them ask for: encoding it on each request was most of what such a
// skills/list cost.
func (srv *Server) supersetFirst(snap published.Snapshot) []byte {
	c := srv.supersets.Load()
	if c == nil || c.snap != snap.ID() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[pageKey{owner: cursorOwner(snap)}]
}

// keepSupersetFirst encodes res, the first superset page of snap, keeps
// it for [Server.supersetFirst] and returns it as a response of encoded
// bytes, so that this request is answered from the same bytes as the next.
func (srv *Server) keepSupersetFirst(snap published.Snapshot, res *listResponse) (*listResponse, error) {
	b, err := res.MarshalJSON()
	if err != nil {
		return nil, err
	}
	c := srv.supersets.Load()
	if c == nil || c.snap != snap.ID() {
		c = &pageCache{snap: snap.ID(), m: map[pageKey][]byte{}}
		srv.supersets.Store(c)
	}
	key := pageKey{owner: cursorOwner(snap)}
	c.mu.Lock()
	if _, ok := c.m[key]; !ok && c.size+len(b) <= maxPageCache {
		c.m[key] = b
		c.size += len(b)
	}
	c.mu.Unlock()
	return &listResponse{page: b}, nil
}
