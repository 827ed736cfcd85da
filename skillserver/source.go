package skillserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/skillport/skillport/catalog"
)

// Snapshot is an immutable view of everything a server publishes: skills,
// their files and the directory resources above and inside them. The server
// answers every request from one Snapshot and never looks anything up
// outside it, so a URI reaches content only when the snapshot lists it.
//
// The types are those of package catalog, which any publisher can fill in:
// a [*catalog.Catalog] through [CatalogSource], or a gateway re-publishing
// skills it fetched elsewhere. A [catalog.Skill] with no Files is published
// with "resources": "dynamic".
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
}

// CatalogSource serves a [*catalog.Catalog] and the snapshots that replace
// it: [CatalogSource.Swap] installs a new one atomically (live reload calls
// it), and [CatalogSource.Refresh] rebuilds the catalog when a file is
// found changed on read. It is safe for concurrent use.
type CatalogSource struct {
	cur atomic.Pointer[catalogSnapshot]

	reload sync.Mutex // serialises Refresh and Swap

	feed ChangeFeed
}

// NewCatalogSource returns a Source serving c.
func NewCatalogSource(c *catalog.Catalog) *CatalogSource {
	if c == nil {
		panic("server: NewCatalogSource(nil)")
	}
	s := &CatalogSource{}
	s.cur.Store(newCatalogSnapshot(c))
	return s
}

// Catalog returns the catalog currently served.
func (s *CatalogSource) Catalog() *catalog.Catalog { return s.cur.Load().Catalog }

// Snapshot implements [Source].
func (s *CatalogSource) Snapshot() Snapshot { return s.cur.Load() }

// Swap makes c the served catalog and notifies OnChange callbacks when its
// content differs from the previous one.
func (s *CatalogSource) Swap(c *catalog.Catalog) {
	s.reload.Lock()
	defer s.reload.Unlock()
	s.swapLocked(c)
}

func (s *CatalogSource) swapLocked(c *catalog.Catalog) *catalogSnapshot {
	old := s.cur.Load()
	if old.Catalog == c {
		return old
	}
	snap := newCatalogSnapshot(c)
	s.cur.Store(snap)
	if old.ID() != snap.ID() {
		s.feed.Notify(old, snap)
	}
	return snap
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
	if s.cur.Load().Catalog == c {
		s.swapLocked(p)
	}
}

// Refresh implements [Source]: it reloads the catalog unless another caller
// already replaced stale.
func (s *CatalogSource) Refresh(ctx context.Context, stale Snapshot) (Snapshot, error) {
	s.reload.Lock()
	defer s.reload.Unlock()
	cur := s.cur.Load()
	if Snapshot(cur) != stale {
		return cur, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := cur.Catalog.Reload()
	if err != nil {
		return nil, fmt.Errorf("server: reloading the catalog: %w", err)
	}
	return s.swapLocked(c), nil
}

// OnChange implements [Source].
func (s *CatalogSource) OnChange(fn func(old, new Snapshot)) (cancel func()) {
	return s.feed.OnChange(fn)
}

// Watch keeps the source current with the directory its catalog was opened
// from (see [catalog.Watch]) until ctx is done.
func (s *CatalogSource) Watch(ctx context.Context, opts *catalog.WatchOptions) error {
	return catalog.Watch(ctx, s.Catalog(), opts, s.Swap)
}

// catalogSnapshot adapts a catalog to [Snapshot].
type catalogSnapshot struct {
	*catalog.Catalog
	files func() []*catalog.File
}

func newCatalogSnapshot(c *catalog.Catalog) *catalogSnapshot {
	return &catalogSnapshot{Catalog: c, files: sync.OnceValue(func() []*catalog.File {
		seen := map[*catalog.File]bool{}
		var out []*catalog.File
		for _, sk := range c.Skills() {
			for _, f := range sk.Files {
				if !seen[f] {
					seen[f] = true
					out = append(out, f)
				}
			}
		}
		slices.SortFunc(out, func(a, b *catalog.File) int { return cmp.Compare(a.URI, b.URI) })
		return out
	})}
}

func (s *catalogSnapshot) Files() []*catalog.File { return s.files() }

func (s *catalogSnapshot) ReadFile(_ context.Context, f *catalog.File) ([]byte, error) {
	return s.Catalog.ReadFile(f)
}

// Static returns a Source that always serves snap and never changes.
func Static(snap Snapshot) Source { return staticSource{snap} }

type staticSource struct{ snap Snapshot }

func (s staticSource) Snapshot() Snapshot { return s.snap }
func (s staticSource) Refresh(context.Context, Snapshot) (Snapshot, error) {
	return nil, errors.New("server: this source cannot be refreshed")
}
func (s staticSource) OnChange(func(old, new Snapshot)) func() { return func() {} }
