package access

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// VisibleFunc is the decision [Filter] applies: whether caller c (nil for
// anonymous) may see sk. [Rules.Visible] is one.
type VisibleFunc func(c *skillserver.Caller, sk *catalog.Skill) bool

// Filter wraps src so that each request is answered from the part of its
// snapshot the request's caller may see. skills/list, skills/get,
// resources/list, resources/read and resources/directory/read all answer
// from that view, so a hidden skill, its files and its directories are
// absent: probing them gets the not-found answer an absent skill gets.
// Snapshot() (instructions) is the anonymous view. The result is a
// [published.ViewSource], so a session is told only about changes to what its
// own caller sees, and list cursors are bound to the caller they were
// issued to.
//
// Views are cached per snapshot and caller (at most [MaxCachedViews] at a
// time), so a request costs a map lookup, not a pass over the catalog.
func Filter(src published.Source, visible VisibleFunc) published.ViewSource {
	return &filtered{src: src, visible: visible}
}

// MaxCachedViews bounds the views [Filter] keeps: one per distinct caller
// (subject, scopes, groups) of the current snapshot. Past it the cache
// starts over, so a flood of distinct callers costs rebuilding views, not
// memory.
const MaxCachedViews = 1024

type filtered struct {
	src     published.Source
	visible VisibleFunc

	mu    sync.Mutex
	of    published.Snapshot // the snapshot the cached views are of
	views map[string]*view   // by skillserver.Caller.Key
}

// viewOf returns c's view of base, from the cache when it has it.
func (f *filtered) viewOf(base published.Snapshot, c *skillserver.Caller) *view {
	if v, ok := base.(*view); ok {
		base = v.base
	}
	if base == nil {
		return newView(nil, c, f.visible)
	}
	if !reflect.TypeOf(base).Comparable() {
		return newView(base, c, f.visible) // cannot tell it from the cached one
	}
	k := c.Key()
	f.mu.Lock()
	if f.of == base {
		if v := f.views[k]; v != nil {
			f.mu.Unlock()
			return v
		}
	}
	f.mu.Unlock()
	v := newView(base, c, f.visible)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.of != base {
		// Only the newest snapshot's views are worth keeping; an older one
		// (a change notification's "old") is looked at once.
		if f.of != nil && base != f.src.Snapshot() {
			return v
		}
		f.of, f.views = base, map[string]*view{}
	}
	if len(f.views) >= MaxCachedViews {
		clear(f.views)
	}
	f.views[k] = v
	return v
}

// View implements [published.ViewSource]: what c may see of snap, or of
// what the source currently serves c when snap is nil.
func (f *filtered) View(ctx context.Context, snap published.Snapshot, c *skillserver.Caller) (published.Snapshot, error) {
	if snap == nil {
		var err error
		if vs, ok := f.src.(published.ViewSource); ok {
			snap, err = vs.View(ctx, nil, c)
		} else {
			snap = f.src.Snapshot()
		}
		if err != nil {
			return nil, err
		}
		if snap == nil {
			return nil, fmt.Errorf("access: the source has no snapshot")
		}
	}
	return f.viewOf(snap, c), nil
}

// Snapshot implements [published.Source]: the anonymous caller's view.
func (f *filtered) Snapshot() published.Snapshot {
	snap := f.src.Snapshot()
	if snap == nil {
		return nil
	}
	return f.viewOf(snap, nil)
}

// Refresh implements [published.Source].
func (f *filtered) Refresh(ctx context.Context, stale published.Snapshot) (published.Snapshot, error) {
	if v, ok := stale.(*view); ok {
		stale = v.base
	}
	snap, err := f.src.Refresh(ctx, stale)
	if err != nil {
		return nil, err
	}
	return f.viewOf(snap, skillserver.CallerFromContext(ctx)), nil
}

// Ready reports whether the filtered source can serve, when it can say
// (endpoint.Readier): filtering hides skills, not a database that is down.
func (f *filtered) Ready(ctx context.Context) error {
	if rd, ok := f.src.(interface{ Ready(context.Context) error }); ok {
		return rd.Ready(ctx)
	}
	return nil
}

// ListSkills implements [published.Source].
func (f *filtered) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	return published.ListSkills(ctx, f)
}

// ReadFile implements [published.Source].
func (f *filtered) ReadFile(ctx context.Context, file *catalog.File) ([]byte, error) {
	return published.ReadFile(ctx, f, file)
}

// OnChange implements [published.Source]. Callbacks get anonymous views, on
// every change of the source, also one no anonymous caller can see; a
// callback that tells callers about it asks [filtered.View] what each one
// sees of the two.
func (f *filtered) OnChange(fn func(old, new published.Snapshot)) (cancel func()) {
	return f.src.OnChange(func(old, new published.Snapshot) {
		fn(newView(old, nil, f.visible), f.viewOf(new, nil))
	})
}

// view is the part of a snapshot one caller may see: [published.NewSnapshot]
// of the visible skills, reading through the base snapshot.
type view struct {
	published.Snapshot
	base published.Snapshot
}

func newView(base published.Snapshot, c *skillserver.Caller, visible VisibleFunc) *view {
	var skills []*catalog.Skill
	var read func(context.Context, *catalog.File) ([]byte, error)
	if base != nil {
		read = base.ReadFile
		all := base.Skills()
		shown := make([]bool, len(all))
		var hidden map[string]bool // roots of the skills c may not see
		for i, sk := range all {
			if sk == nil {
				continue
			}
			if shown[i] = visible(c, sk); !shown[i] {
				if hidden == nil {
					hidden = map[string]bool{}
				}
				hidden[sk.Root] = true
			}
		}
		skills = make([]*catalog.Skill, 0, len(all))
		for i, sk := range all {
			if shown[i] {
				skills = append(skills, withoutHidden(sk, hidden))
			}
		}
	}
	// The snapshot, hence its ID, covers only what this caller sees, so
	// cursors and change detection never carry another caller's catalog.
	return &view{Snapshot: published.NewSnapshot(skills, read, nil), base: base}
}

// withoutHidden returns sk without the files of the nested skills whose
// roots are in hidden: a file belongs to the innermost skill containing
// it, and a skill the caller may not see takes its whole subtree out of
// every enclosing skill's files (hence of its listings, directories and
// archives), so a visible parent never carries a hidden child's bytes. sk
// itself comes back when nothing is taken out.
func withoutHidden(sk *catalog.Skill, hidden map[string]bool) *catalog.Skill {
	if len(hidden) == 0 {
		return sk
	}
	var kept []*catalog.File
	for i, f := range sk.Files {
		if f == nil || !underHidden(f.URI, sk.Root, hidden) {
			if kept != nil {
				kept = append(kept, f)
			}
			continue
		}
		if kept == nil {
			kept = append(make([]*catalog.File, 0, len(sk.Files)), sk.Files[:i]...)
		}
	}
	if kept == nil {
		return sk
	}
	cp := *sk
	cp.Files, cp.Size = kept, 0
	for _, f := range kept {
		if f != nil {
			cp.Size += f.Size
		}
	}
	return &cp
}

// underHidden reports whether uri lies under one of the hidden roots below
// root (root itself excluded: it is the visible skill's own).
func underHidden(uri, root string, hidden map[string]bool) bool {
	for u := uri; len(u) > len(root); {
		i := strings.LastIndexByte(u, '/')
		if i <= len(root) {
			return false
		}
		if u = u[:i]; hidden[u] {
			return true
		}
	}
	return false
}
