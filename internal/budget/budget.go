// Package budget bounds the bytes of large responses a server holds at
// once, on all its connections together.
//
// A response is held in memory from the moment it is produced until the
// client has taken it: a client that requests a large file and never
// reads its socket holds that memory until a write deadline cuts it. A
// per-connection bound multiplies by the connections; a budget shared by
// the whole server does not. A handler acquires the bytes a large
// response will hold before producing it, and releases them when it is
// written or the client is gone; while the budget is spent, the next large
// response waits (a bounded time), and small responses never do.
package budget

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// Defaults of [New].
const (
	// DefaultSize is the bytes of large responses held at once: four of
	// the largest skill files (16 MiB) streamed, or one encoded whole.
	DefaultSize = 64 << 20
	// DefaultWait is how long a large response waits for budget before it
	// is refused.
	DefaultWait = 10 * time.Second
	// Small is the size under which a response is not charged: memory for
	// those is bounded by the connection cap times this.
	Small = 64 << 10
)

// Budget is a server-wide bound on the bytes of large responses in
// flight. A nil *Budget bounds nothing. It is safe for concurrent use.
type Budget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration
	used atomic.Int64
}

// New returns a budget of size bytes (DefaultSize when 0) whose waiters
// give up after wait (DefaultWait when 0); a negative size returns nil, no
// bound.
func New(size int64, wait time.Duration) *Budget {
	if size < 0 {
		return nil
	}
	if size == 0 {
		size = DefaultSize
	}
	if wait <= 0 {
		wait = DefaultWait
	}
	return &Budget{sem: semaphore.NewWeighted(size), size: size, wait: wait}
}

// Size returns the budget in bytes (0 for nil: no bound).
func (b *Budget) Size() int64 {
	if b == nil {
		return 0
	}
	return b.size
}

// ErrBusy is returned by [Budget.Acquire] when the budget stayed spent for
// its whole wait.
var ErrBusy = errors.New("the server is already sending its limit of bytes of large answers")

// Acquire reserves n bytes (at most the whole budget, so that a response
// larger than the budget is served alone) until release is called. It
// waits while the budget is spent, until ctx ends (the client went away)
// or the budget's wait passes, then returns an error wrapping ErrBusy or
// ctx's error. n below Small is not charged.
func (b *Budget) Acquire(ctx context.Context, n int64) (release func(), err error) {
	if b == nil || n < Small {
		return func() {}, nil
	}
	n = min(n, b.size)
	if !b.sem.TryAcquire(n) {
		wctx, cancel := context.WithTimeout(ctx, b.wait)
		err := b.sem.Acquire(wctx, n)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w (%d MiB), and none finished within %s", ErrBusy, b.size>>20, b.wait)
		}
	}
	b.used.Add(n)
	var done bool
	return func() {
		if !done {
			done = true
			b.used.Add(-n)
			b.sem.Release(n)
		}
	}, nil
}

// InUse returns the bytes reserved now, for metrics.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

type ctxKey struct{}

// WithContext returns ctx carrying b, for the handlers of one server to
// share it.
func WithContext(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, ctxKey{}, b)
}

// FromContext returns the budget ctx carries (nil: no bound) and whether
// it carries one.
func FromContext(ctx context.Context) (*Budget, bool) {
	b, ok := ctx.Value(ctxKey{}).(*Budget)
	return b, ok
}
