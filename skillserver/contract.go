package skillserver

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
)

// Caller is who a request comes from, for sources whose answer depends on
// it (per-user catalogs, authorization). The server puts one in the
// context of every request it hands a source; a nil *Caller means an
// anonymous caller.
type Caller = published.Caller

// ContextWithCaller returns a context carrying c, for tests and for
// transports that identify callers themselves.
func ContextWithCaller(ctx context.Context, c *Caller) context.Context {
	return published.ContextWithCaller(ctx, c)
}

// CallerFromContext returns the caller a request came from, or nil for an
// anonymous one.
func CallerFromContext(ctx context.Context) *Caller {
	return published.CallerFromContext(ctx)
}

// CallerFromToken is the caller go-sdk's bearer-token verification
// established: the token's user and scopes, and its "groups" claim when it
// is a list of strings. It returns nil for no token.
func CallerFromToken(ti *auth.TokenInfo) *Caller {
	if ti == nil {
		return nil
	}
	c := &Caller{Subject: ti.UserID, Scopes: slices.Clone(ti.Scopes)}
	switch g := ti.Extra["groups"].(type) {
	case []string:
		c.Groups = slices.Clone(g)
	case []any:
		for _, v := range g {
			if s, ok := v.(string); ok {
				c.Groups = append(c.Groups, s)
			}
		}
	}
	return c
}

// withCaller adds the request's caller to ctx unless one is there already.
func withCaller(ctx context.Context, req mcp.Request) context.Context {
	if CallerFromContext(ctx) != nil || req == nil {
		return ctx
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return ContextWithCaller(ctx, CallerFromToken(ex.TokenInfo))
	}
	return ctx
}

// snapshot returns the snapshot that answers a request: the view of the
// request's caller, which carries the caller's cursor fingerprint.
func (srv *Server) snapshot(ctx context.Context) (published.Snapshot, error) {
	if srv.viewSrc == nil {
		return srv.src.Snapshot(), nil
	}
	c := CallerFromContext(ctx)
	snap, err := srv.viewSrc.View(ctx, nil, c)
	if err != nil || snap == nil {
		srv.log.Error("the skill source failed", "err", err)
		return nil, internalError("", "the server cannot list its skills right now; try again later")
	}
	return ownedBy(snap, c), nil
}

// refresh asks the source for a snapshot built after stale (one the
// server answered from) reported a change.
func (srv *Server) refresh(ctx context.Context, stale published.Snapshot) (published.Snapshot, error) {
	if o, ok := stale.(*ownedSnapshot); ok {
		stale = o.Snapshot
	}
	return srv.src.Refresh(ctx, stale)
}

// SkillSource is what a publisher of skills implements, in the spirit of
// io/fs: list them, and read a file of one. Build skills with
// [catalog.NewSkill], or by hand with the digests and sizes a store keeps
// (no file's bytes are needed to list); [New] and [Attach] derive
// everything else: the maps by skill, file and directory URI every
// request is answered from, built once per listing. The context carries
// the [Caller], so a source may answer each user differently.
//
// skills/get is answered from the list. Optional interfaces add what not
// every source has: [DirectoryReader] (directories of "dynamic" skills),
// [ChangeNotifier] (pushing changes to clients, and caching the list until
// then) and [Refresher].
type SkillSource interface {
	// ListSkills returns the skills published to the caller in ctx.
	ListSkills(ctx context.Context) ([]*catalog.Skill, error)
	// ReadFile returns the content of f, a file of a listed skill. The
	// bytes must match f.Size and f.Digest; when the content has changed,
	// return an error wrapping [catalog.ErrChanged] and the server lists
	// again.
	ReadFile(ctx context.Context, f *catalog.File) ([]byte, error)
}

// DirectoryReader is implemented by a [SkillSource] that lists
// directories itself, typically those of "dynamic" skills (skills without
// Files), which the server cannot derive. It returns nil, nil for a URI
// that is not one of its directories.
type DirectoryReader interface {
	ReadDirectory(ctx context.Context, uri string) (*catalog.Dir, error)
}

// ChangeNotifier is implemented by a [SkillSource] that knows when its
// skills change. fn must be called after each change; the returned
// function unregisters it. A source that implements it is listed once per
// caller and change rather than once per request.
type ChangeNotifier interface {
	OnChange(fn func()) (cancel func())
}

// Refresher is implemented by a [SkillSource] that must be told to
// reload after ReadFile reported [catalog.ErrChanged].
type Refresher interface {
	Refresh(ctx context.Context) error
}

// fromSkills adapts a [SkillSource] to the source the server answers
// from. Files and directory resources are derived from the listed skills
// (published.NewSnapshot); each request is answered from a snapshot of
// what the source lists for its caller. Of a snapshot handed to OnChange
// callbacks only the anonymous view is known, so every session is told
// about a change of what anonymous callers see.
func fromSkills(s SkillSource) published.ViewSource {
	a := &skillSource{src: s, cache: map[string]published.Snapshot{}}
	if n, ok := s.(ChangeNotifier); ok {
		a.notifies = true
		n.OnChange(a.changed)
	}
	return a
}

type skillSource struct {
	src      SkillSource
	notifies bool

	feed published.ChangeFeed

	mu    sync.Mutex
	cache map[string]published.Snapshot // by caller key; only when notifies
	anon  published.Snapshot            // last anonymous snapshot handed out
	gen   int                           // counts changes, so a list taken before one is not cached after it
}

// View implements published.ViewSource: the current snapshot is listed for c, an
// earlier one is returned as it is.
func (a *skillSource) View(ctx context.Context, snap published.Snapshot, c *Caller) (published.Snapshot, error) {
	if snap != nil {
		return snap, nil
	}
	return a.list(ContextWithCaller(ctx, c))
}

// list returns what the source lists for the caller in ctx, from the cache
// when the source notifies changes.
func (a *skillSource) list(ctx context.Context) (published.Snapshot, error) {
	key := CallerFromContext(ctx).Key()
	a.mu.Lock()
	gen := a.gen
	snap := a.cache[key]
	a.mu.Unlock()
	if snap != nil {
		return snap, nil
	}
	skills, err := a.src.ListSkills(ctx)
	if err != nil {
		return nil, fmt.Errorf("server: listing skills: %w", err)
	}
	snap = newListedSnapshot(a.src, ctx, skills)
	a.mu.Lock()
	if a.notifies && gen == a.gen {
		a.cache[key] = snap
	}
	if key == "" {
		a.anon = snap
	}
	a.mu.Unlock()
	return snap, nil
}

// Snapshot implements published.Source: the anonymous caller's view.
func (a *skillSource) Snapshot() published.Snapshot {
	snap, err := a.list(context.Background())
	if err != nil {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.anon != nil {
			return a.anon
		}
		return newListedSnapshot(a.src, context.Background(), nil)
	}
	return snap
}

// Refresh implements published.Source.
func (a *skillSource) Refresh(ctx context.Context, stale published.Snapshot) (published.Snapshot, error) {
	if r, ok := a.src.(Refresher); ok {
		if err := r.Refresh(ctx); err != nil {
			return nil, err
		}
	}
	a.mu.Lock()
	clear(a.cache)
	a.gen++
	a.mu.Unlock()
	return a.list(ctx)
}

// ListSkills implements published.Source.
func (a *skillSource) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	return published.ListSkills(ctx, a)
}

// ReadFile implements published.Source.
func (a *skillSource) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	return published.ReadFile(ctx, a, f)
}

// OnChange implements published.Source. Callbacks run only for a source that
// implements [ChangeNotifier].
func (a *skillSource) OnChange(fn func(old, new published.Snapshot)) (cancel func()) {
	return a.feed.OnChange(fn)
}

func (a *skillSource) changed() {
	a.mu.Lock()
	old := a.anon
	clear(a.cache)
	a.gen++
	a.mu.Unlock()
	snap := a.Snapshot()
	if old != nil && old.ID() == snap.ID() {
		return
	}
	if old == nil {
		old = newListedSnapshot(a.src, context.Background(), nil)
	}
	a.feed.Notify(old, snap)
}

// newListedSnapshot is the [published.Snapshot] of what a [SkillSource] listed for
// one caller (ctx): [published.NewSnapshot]'s, with the directories a
// [DirectoryReader] lists beside those derived from the skills.
func newListedSnapshot(src SkillSource, ctx context.Context, skills []*catalog.Skill) published.Snapshot {
	known := &published.Known{}
	if r, ok := src.(DirectoryReader); ok {
		ctx := context.WithoutCancel(ctx)
		known.Dynamic = func(uri string) *catalog.Dir {
			d, err := r.ReadDirectory(ctx, uri)
			if err != nil {
				return nil
			}
			return d
		}
	}
	return published.NewSnapshot(skills, src.ReadFile, known)
}
