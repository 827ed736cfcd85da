package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/skillserver"
)

// withCaller puts the caller of req's bearer token in ctx, unless the
// transport put one there already.
func withCaller(ctx context.Context, req mcp.Request) context.Context {
	if skillserver.CallerFromContext(ctx) != nil || req == nil {
		return ctx
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return skillserver.ContextWithCaller(ctx, skillserver.CallerFromToken(ex.TokenInfo))
	}
	return ctx
}

// entrySkill is e as the decision sees it: the skill the gateway
// re-publishes for it.
func entrySkill(e *host.Entry) *catalog.Skill {
	root := Republished(e.Origin, e.Root)
	return &catalog.Skill{URI: root + "/" + skilluri.SkillFile, Root: root, Path: e.Origin + "/" + e.Path,
		Name: e.Name, Dir: e.Origin + "/" + e.Path, Frontmatter: e.Frontmatter}
}

// sees reports whether the caller of ctx may see e.
func (g *Gateway) sees(ctx context.Context, e *host.Entry) bool {
	if g.opts.Visible == nil {
		return true
	}
	return g.opts.Visible(skillserver.CallerFromContext(ctx), entrySkill(e))
}

// hiddenIn returns whether a URI inside e belongs to a skill of e's origin
// nested in e that the caller of ctx may not see, or nil when there is
// none. As for the catalog a server publishes (access.Filter), a file
// belongs to the innermost skill containing it, and a hidden skill takes
// its whole subtree out of every skill around it: the upstream's manifest
// of e lists those files, the caller is never shown them.
func (g *Gateway) hiddenIn(ctx context.Context, e *host.Entry) func(uri string) bool {
	if g.opts.Visible == nil {
		return nil
	}
	c := skillserver.CallerFromContext(ctx)
	var roots []string
	for _, o := range g.view.Load().admitted {
		if o.Origin == e.Origin && strings.HasPrefix(o.Root, e.Root+"/") && !g.opts.Visible(c, entrySkill(o)) {
			roots = append(roots, o.Root)
		}
	}
	if len(roots) == 0 {
		return nil
	}
	return func(uri string) bool {
		return slices.ContainsFunc(roots, func(r string) bool { return uri == r || strings.HasPrefix(uri, r+"/") })
	}
}

// hides reports whether uri, inside e, is hidden from the caller of ctx
// (see hiddenIn).
func (g *Gateway) hides(ctx context.Context, e *host.Entry, uri string) bool {
	hide := g.hiddenIn(ctx, e)
	return hide != nil && hide(uri)
}

// maxCallerViews bounds the per-caller views kept (see callerView); past
// it the cache starts over.
const maxCallerViews = 256

type callerViewKey struct {
	gen    uint64
	caller string
}

// callerView is the part of v the caller of ctx sees.
func (g *Gateway) callerView(ctx context.Context, v *view) *view {
	if g.opts.Visible == nil {
		return v
	}
	return g.viewOf(v, skillserver.CallerFromContext(ctx))
}

// viewOf is the part of v caller c sees, named as if the skills hidden
// from c did not exist: the registry's qualified names ("docs__pdf",
// "billing/refunds"), computed over every skill, would tell c that a
// skill it may not see shares a name with one it may. The entries are
// copies carrying c's names, sorted by them as v is by the registry's.
func (g *Gateway) viewOf(v *view, c *skillserver.Caller) *view {
	k := callerViewKey{v.gen, c.Key()}
	g.viewsMu.Lock()
	cv := g.views[k]
	g.viewsMu.Unlock()
	if cv != nil {
		return cv
	}
	var seen []*host.Entry
	for _, e := range v.admitted {
		if g.opts.Visible(c, entrySkill(e)) {
			seen = append(seen, e)
		}
	}
	names := g.h.Qualify(seen)
	cv = &view{byKey: map[key]*host.Entry{}, gen: v.gen, names: names}
	for _, e := range names.Entries() {
		if _, shown := v.byKey[keyOf(e)]; shown {
			cv.entries = append(cv.entries, e)
			cv.byKey[keyOf(e)] = e
		}
	}
	sort.Slice(cv.entries, func(i, j int) bool { return cv.entries[i].Qualified < cv.entries[j].Qualified })
	g.viewsMu.Lock()
	if g.views == nil || len(g.views) >= maxCallerViews {
		g.views = map[callerViewKey]*view{}
	}
	g.views[k] = cv
	g.viewsMu.Unlock()
	return cv
}

// visibleTo is visible with Options.Visible: name is resolved among the
// skills the caller of ctx sees, under the names it is shown, and the
// entry returned carries them.
func (g *Gateway) visibleTo(ctx context.Context, name string) (*host.Entry, error) {
	v := g.view.Load()
	cv := g.callerView(ctx, v)
	e, err := cv.names.Lookup(name)
	if err != nil {
		if errors.Is(err, host.ErrUnknownSkill) {
			return nil, fmt.Errorf("%w; find skills with search_skills", err)
		}
		return nil, err
	}
	if _, ok := cv.byKey[keyOf(e)]; !ok {
		if e.Declined != nil {
			return nil, e.Declined
		}
		return nil, fmt.Errorf("%w %q; find skills with search_skills", host.ErrUnknownSkill, name)
	}
	return e, nil
}

// published is the re-publication the caller of req sees.
func (g *Gateway) published(ctx context.Context, req mcp.Request) published.Snapshot {
	if g.pub == nil {
		return g.src.Snapshot()
	}
	ctx = withCaller(ctx, req)
	snap, err := g.pub.View(ctx, nil, skillserver.CallerFromContext(ctx))
	if err != nil {
		return g.pub.Snapshot()
	}
	return snap
}

// promptsMiddleware shows each caller the prompts of the skills it sees,
// under the names it is shown them by: prompts/list leaves the others out
// and renames the rest, and prompts/get of a name the caller was not
// shown answers as for a prompt that does not exist.
func (g *Gateway) promptsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = withCaller(ctx, req)
		switch method {
		case "prompts/get":
			r, ok := req.(*mcp.GetPromptRequest)
			if !ok || r.Params == nil {
				break
			}
			var e *host.Entry
			for _, c := range g.callerView(ctx, g.view.Load()).entries {
				if c.Qualified == r.Params.Name {
					e = c
					break
				}
			}
			if e == nil {
				// go-sdk's own words for an unknown prompt.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", r.Params.Name)}
			}
			return g.prompt(ctx, e, r)
		case "prompts/list":
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListPromptsResult); ok && err == nil {
				v := g.view.Load()
				cv := g.callerView(ctx, v)
				registered := map[string]key{}
				for _, e := range v.entries {
					registered[e.Qualified] = keyOf(e)
				}
				kept := r.Prompts[:0:0]
				for _, p := range r.Prompts {
					k, ok := registered[p.Name]
					if e := cv.byKey[k]; ok && e != nil {
						c := *p
						c.Name = e.Qualified
						kept = append(kept, &c)
					}
				}
				sort.SliceStable(kept, func(i, j int) bool { return kept[i].Name < kept[j].Name })
				r.Prompts = kept
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}
