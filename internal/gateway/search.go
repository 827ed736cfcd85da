package gateway

import (
	"context"

	"github.com/skillport/skillport/host"
)

// searchIndex is the BM25 index of one view, built on the first search
// after the view (or the set of known bodies) changed: the catalog costs
// nothing until someone searches.
type searchIndex struct {
	gen       uint64
	bodiesGen int
	index     *Index
	entries   []*host.Entry
}

// searchIndex returns the index of the current view, building it if needed.
// Bodies are those already known: MCP skills loaded so far and, when
// bodies are indexed, local skills read from disk now. No MCP file is
// fetched to build it.
func (g *Gateway) searchIndex(ctx context.Context) *searchIndex {
	v := g.view.Load()
	g.idxMu.Lock()
	defer g.idxMu.Unlock()
	if g.opts.Visible != nil {
		// The caller's view is cached (bounded) per view and caller; so
		// is its index, built on its first search.
		cv := g.callerView(ctx, v)
		if ix := cv.idx; ix != nil && ix.bodiesGen == g.bodiesGen {
			return ix
		}
		cv.idx = g.buildIndex(ctx, cv)
		return cv.idx
	}
	if ix := g.idx; ix != nil && ix.gen == v.gen && ix.bodiesGen == g.bodiesGen {
		return ix
	}
	g.idx = g.buildIndex(ctx, v)
	return g.idx
}

// buildIndex indexes v's entries; g.idxMu is held.
func (g *Gateway) buildIndex(ctx context.Context, v *view) *searchIndex {
	docs := make([]Doc, len(v.entries))
	for i, e := range v.entries {
		name := e.Qualified
		if e.Path != e.Name {
			name += " " + e.Path
		}
		docs[i] = Doc{Name: name, Description: e.Description()}
		if !g.opts.IndexBodies {
			continue
		}
		body, ok := g.bodies[keyOf(e)]
		if !ok && e.Kind == host.KindFilesystem {
			if l, err := g.h.Load(ctx, e); err == nil {
				body = string(l.Document.Body)
				g.bodies[keyOf(e)] = body
			}
		}
		docs[i].Body = body
	}
	return &searchIndex{gen: v.gen, bodiesGen: g.bodiesGen, index: BuildIndex(docs), entries: v.entries}
}

// noteBody records the body of a loaded skill for the index.
func (g *Gateway) noteBody(l *host.Loaded) {
	if !g.opts.IndexBodies || l.Document == nil {
		return
	}
	g.idxMu.Lock()
	defer g.idxMu.Unlock()
	k := keyOf(l.Entry)
	if body := string(l.Document.Body); g.bodies[k] != body {
		g.bodies[k] = body
		g.bodiesGen++
	}
}
