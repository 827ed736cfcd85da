package budget

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestBudget: small answers are never charged, a large one is clamped to
// the budget, a waiter is served when bytes are released, gives up with
// ErrBusy after the wait, or with the context's error when its client
// leaves; a nil budget bounds nothing.
func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b := New(1<<20, 5*time.Second)
		for range 100 {
			if _, err := b.Acquire(ctx, Small-1); err != nil {
				t.Fatalf("a small answer was charged: %v", err)
			}
		}
		big, err := b.Acquire(ctx, 10<<20) // clamped: served alone
		if err != nil || b.InUse() != 1<<20 {
			t.Fatalf("a large answer: %v, %d bytes in use, want the whole budget", err, b.InUse())
		}
		start := time.Now()
		if _, err := b.Acquire(ctx, Small); !errors.Is(err, ErrBusy) || time.Since(start) != 5*time.Second {
			t.Fatalf("with the budget spent: %v after %v, want ErrBusy after 5s", err, time.Since(start))
		}
		cctx, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(time.Second); cancel() }()
		if _, err := b.Acquire(cctx, Small); !errors.Is(err, context.Canceled) {
			t.Fatalf("client gone while waiting: %v, want context.Canceled", err)
		}
		go func() { time.Sleep(2 * time.Second); big(); big() }() // a second release is a no-op
		start = time.Now()
		rel, err := b.Acquire(ctx, 1<<20)
		if err != nil || time.Since(start) != 2*time.Second {
			t.Fatalf("after a release: %v after %v, want served after 2s", err, time.Since(start))
		}
		rel()
		if b.InUse() != 0 {
			t.Fatalf("%d bytes in use after every release", b.InUse())
		}
		var none *Budget
		if r, err := none.Acquire(ctx, 1<<40); err != nil || none.Size() != 0 {
			t.Fatalf("nil budget: %v", err)
		} else {
			r()
		}
		if New(-1, 0) != nil {
			t.Fatal("a negative size must turn the budget off")
		}
	})
}
