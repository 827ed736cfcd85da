package published

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/skillport/skillport/catalog"
)

// Snapshot is an immutable view of everything a server publishes: skills,
// their files and the directory resources above and inside them. The server
// answers every request from one Snapshot and never looks anything up
// outside it, so a URI reaches content only when the snapshot lists it.
//
// The types are those of package catalog. Every Snapshot is built by
// [NewSnapshot]. A [catalog.Skill] with no Files is published with
// "resources": "dynamic".
type Snapshot interface {
	// ID identifies the snapshot's content; list cursors are bound to it.
	ID() string
	// Skills returns the published skills sorted by URI.
	Skills() []*catalog.Skill
	// Skill returns the skill whose SKILL.md has exactly this URI, or nil.
	Skill(uri string) *catalog.Skill
	// Files returns every published file once, sorted by URI.
	Files() []*catalog.File
	// File returns the file with exactly this URI, or nil.
	File(uri string) *catalog.File
	// Dir returns the directory resource with exactly this URI, or nil.
	Dir(uri string) *catalog.Dir
	// ReadFile returns the content of f, a file of this snapshot. The bytes
	// must match f.Size and f.Digest; when the content has changed since the
	// snapshot was taken, ReadFile returns an error wrapping
	// [catalog.ErrChanged] and the server asks its [Source] to refresh.
	ReadFile(ctx context.Context, f *catalog.File) ([]byte, error)
}

// Source hands the server the current [Snapshot], in the spirit of fs.FS:
// the server holds no state of its own about what it serves.
//
// Every Source also lists and reads as a skillserver.SkillSource does,
// answering from the snapshot the caller in ctx sees ([ListSkills] and
// [ReadFile] implement both for any Source), so skillserver.New and
// skillserver.Attach take it as one and answer from its snapshots directly.
type Source interface {
	// Snapshot returns the current snapshot. It must be cheap: it is called
	// once per request.
	Snapshot() Snapshot
	// Refresh is called when stale.ReadFile reported [catalog.ErrChanged]. It
	// returns a snapshot built after the change (which may be one another
	// caller already built), and reports it to OnChange callbacks.
	Refresh(ctx context.Context, stale Snapshot) (Snapshot, error)
	// OnChange registers fn to be called after each change of the current
	// snapshot, with the old and new snapshots. The returned function
	// unregisters it.
	OnChange(fn func(old, new Snapshot)) (cancel func())
	// ListSkills returns the skills the caller in ctx sees.
	ListSkills(ctx context.Context) ([]*catalog.Skill, error)
	// ReadFile returns the content of f, a file the caller in ctx sees.
	ReadFile(ctx context.Context, f *catalog.File) ([]byte, error)
}

// ViewSource is implemented by a [Source] that shows each caller its own
// part of what it serves (per-user catalogs, visibility rules): the
// adapter of a skillserver.SkillSource that lists per caller, and filters
// such as the server's access rules. The server answers each request from
// the view of its caller, binds list cursors to that caller (another
// caller presenting one gets the "stale cursor" answer a change gets, so a
// cursor never carries one caller's listing to another), and tells each
// session only about changes its caller can see:
// notifications/resources/list_changed when the caller's view changed,
// notifications/resources/updated for a URI whose content changed in it.
// (list_changed notifications of resources the application adds itself are
// filtered the same way.) Snapshot() remains the anonymous view, used for
// instructions and templates.
type ViewSource interface {
	Source
	// View returns what caller c (nil: anonymous) sees of snap, a snapshot
	// this source handed out (from Snapshot, or to an OnChange callback),
	// or of the current one when snap is nil; ctx is the request's. A
	// source that cannot tell what c saw of an earlier snapshot returns
	// snap itself, and c is told about the change as an anonymous caller
	// would be. An error is reported to the client as an internal error,
	// without its text (which may name the source's internals).
	View(ctx context.Context, snap Snapshot, c *Caller) (Snapshot, error)
}

// View returns what the caller in ctx sees of src's current snapshot.
func View(ctx context.Context, src Source) (Snapshot, error) {
	if vs, ok := src.(ViewSource); ok {
		return vs.View(ctx, nil, CallerFromContext(ctx))
	}
	return src.Snapshot(), nil
}

// ListSkills lists what the caller in ctx sees of src: the
// skillserver.SkillSource method of every Source.
func ListSkills(ctx context.Context, src Source) ([]*catalog.Skill, error) {
	snap, err := View(ctx, src)
	if err != nil {
		return nil, err
	}
	return snap.Skills(), nil
}

// ReadFile reads f, a file the caller in ctx sees of src: the
// skillserver.SkillSource method of every Source. A file that has changed
// since it was listed is [catalog.ErrChanged].
func ReadFile(ctx context.Context, src Source, f *catalog.File) ([]byte, error) {
	snap, err := View(ctx, src)
	if err != nil {
		return nil, err
	}
	g := snap.File(f.URI)
	if g == nil {
		return nil, fmt.Errorf("server: %s: %w", f.URI, catalog.ErrNotFound)
	}
	if g.Digest != f.Digest || g.Size != f.Size {
		return nil, fmt.Errorf("server: %s: %w", f.URI, catalog.ErrChanged)
	}
	return snap.ReadFile(ctx, g)
}

// CatalogSource serves a [*catalog.Catalog] and the snapshots that replace
// it: [CatalogSource.Swap] installs a new one atomically (live reload calls
// it), and [CatalogSource.Refresh] rebuilds the catalog when a file is
// found changed on read. It is safe for concurrent use.
type CatalogSource struct {
	cur atomic.Pointer[served]

	reload sync.Mutex // serialises Refresh and Swap

	feed ChangeFeed
}

// served is a catalog and the snapshot of it the server answers from.
type served struct {
	cat  *catalog.Catalog
	snap Snapshot
}

// NewCatalogSource returns a Source serving c.
func NewCatalogSource(c *catalog.Catalog) *CatalogSource {
	if c == nil {
		panic("server: NewCatalogSource(nil)")
	}
	s := &CatalogSource{}
	s.cur.Store(serve(c))
	return s
}

// serve builds the snapshot of c from the maps and ID c has computed
// already, so serving a catalog costs no second index of it.
func serve(c *catalog.Catalog) *served {
	return &served{cat: c, snap: NewSnapshot(c.Skills(),
		func(_ context.Context, f *catalog.File) ([]byte, error) { return c.ReadFile(f) },
		&Known{ID: c.ID(), Skill: c.Skill, File: c.File, Dir: c.Dir})}
}

// Catalog returns the catalog currently served.
func (s *CatalogSource) Catalog() *catalog.Catalog { return s.cur.Load().cat }

// Snapshot implements [Source].
func (s *CatalogSource) Snapshot() Snapshot { return s.cur.Load().snap }

// Swap makes c the served catalog and notifies OnChange callbacks when its
// content differs from the previous one.
func (s *CatalogSource) Swap(c *catalog.Catalog) {
	s.reload.Lock()
	defer s.reload.Unlock()
	s.swapLocked(c)
}

func (s *CatalogSource) swapLocked(c *catalog.Catalog) *served {
	old := s.cur.Load()
	if old.cat == c {
		return old
	}
	cur := serve(c)
	s.cur.Store(cur)
	if old.cat.ID() != c.ID() {
		s.feed.Notify(old.snap, cur.snap)
	}
	return cur
}

// Pack replaces the served catalog by its packed copy ([catalog.Catalog.Pack]),
// the same snapshot, so no OnChange callback runs and no client is told of
// a change. A server whose catalog was built with [catalog.Options.PackLater],
// to answer sooner, calls it once it answers. If a reload replaced the
// catalog while it was being packed, the copy is dropped: the reload is
// packed already.
func (s *CatalogSource) Pack() {
	c := s.Catalog()
	p := c.Pack() // readers go on reading c meanwhile
	if p == c {
		return
	}
	s.reload.Lock()
	defer s.reload.Unlock()
	if s.cur.Load().cat == c {
		s.swapLocked(p)
	}
}

// Refresh implements [Source]: it reloads the catalog unless another caller
// already replaced stale.
func (s *CatalogSource) Refresh(ctx context.Context, stale Snapshot) (Snapshot, error) {
	s.reload.Lock()
	defer s.reload.Unlock()
	cur := s.cur.Load()
	if cur.snap != stale {
		return cur.snap, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := cur.cat.Reload()
	if err != nil {
		return nil, fmt.Errorf("server: reloading the catalog: %w", err)
	}
	return s.swapLocked(c).snap, nil
}

// OnChange implements [Source].
func (s *CatalogSource) OnChange(fn func(old, new Snapshot)) (cancel func()) {
	return s.feed.OnChange(fn)
}

// ListSkills implements [Source].
func (s *CatalogSource) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	return ListSkills(ctx, s)
}

// ReadFile implements [Source].
func (s *CatalogSource) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	return ReadFile(ctx, s, f)
}

// Watch keeps the source current with the directory its catalog was opened
// from (see [catalog.Watch]) until ctx is done.
func (s *CatalogSource) Watch(ctx context.Context, opts *catalog.WatchOptions) error {
	return catalog.Watch(ctx, s.Catalog(), opts, s.Swap)
}

// Static returns a Source that always serves snap and never changes.
func Static(snap Snapshot) Source { return staticSource{snap} }

type staticSource struct{ snap Snapshot }

func (s staticSource) Snapshot() Snapshot { return s.snap }
func (s staticSource) Refresh(context.Context, Snapshot) (Snapshot, error) {
	return nil, errors.New("server: this source cannot be refreshed")
}
func (s staticSource) OnChange(func(old, new Snapshot)) func() { return func() {} }
func (s staticSource) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	return ListSkills(ctx, s)
}
func (s staticSource) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	return ReadFile(ctx, s, f)
}
