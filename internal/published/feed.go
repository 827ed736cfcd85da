package published

import (
	"slices"
	"sync"
)

// ChangeFeed is the change-notification half of a [Source]: it keeps the
// callbacks registered with OnChange and calls them, in the order they
// were registered, when the source's snapshot changes. Embed it in a
// Source of your own. The zero value is ready to use and it is safe for
// concurrent use.
type ChangeFeed struct {
	mu   sync.Mutex
	fns  map[int]func(old, new Snapshot)
	next int
}

// OnChange registers fn, as [Source] requires.
func (f *ChangeFeed) OnChange(fn func(old, new Snapshot)) (cancel func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fns == nil {
		f.fns = map[int]func(old, new Snapshot){}
	}
	id := f.next
	f.next++
	f.fns[id] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.fns, id)
	}
}

// Notify calls every registered callback with the old and new snapshots,
// outside the feed's lock, so a callback may register or cancel others.
func (f *ChangeFeed) Notify(old, new Snapshot) {
	f.mu.Lock()
	ids := make([]int, 0, len(f.fns))
	for id := range f.fns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fns := make([]func(old, new Snapshot), len(ids))
	for i, id := range ids {
		fns[i] = f.fns[id]
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(old, new)
	}
}
