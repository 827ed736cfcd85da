// Package poll runs the update loop a followed source (a git branch, an
// OCI tag) shares: re-resolve every interval or when asked, hand each new
// snapshot on, keep the last good one when an update fails.
package poll

import (
	"context"
	"time"
)

// Run calls update every interval, and whenever trigger receives (nil
// for never), until ctx ends, from the calling goroutine. Each result
// update reports as changed goes to fn; each error to failed (nil drops
// it: update reported it itself). A pinned source never moves: Run only
// waits for ctx.
func Run[T any](ctx context.Context, every time.Duration, pinned bool, trigger <-chan struct{},
	update func(context.Context) (T, bool, error), fn func(T), failed func(error)) {
	if pinned {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-trigger:
		}
		v, changed, err := update(ctx)
		switch {
		case err != nil:
			if failed != nil {
				failed(err)
			}
		case changed:
			fn(v)
		}
	}
}
