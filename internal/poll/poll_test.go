package poll

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestRun: updates run at each tick and each trigger; changed results go
// to fn, errors to failed, unchanged ones nowhere; a pinned source is
// never updated; the loop ends with ctx.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		results := []struct {
			v       int
			changed bool
			err     error
		}{{1, true, nil}, {0, false, nil}, {0, false, errors.New("registry down")}, {2, true, nil}}
		calls := 0
		update := func(context.Context) (int, bool, error) {
			r := results[calls%len(results)]
			calls++
			return r.v, r.changed, r.err
		}
		var got []int
		var errs []error
		trigger := make(chan struct{})
		done := make(chan struct{})
		go func() {
			Run(ctx, time.Minute, false, trigger, update, func(v int) { got = append(got, v) }, func(err error) { errs = append(errs, err) })
			close(done)
		}()
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		trigger <- struct{}{}
		synctest.Wait()
		if calls != 4 || !slices.Equal(got, []int{1, 2}) || len(errs) != 1 {
			t.Errorf("after 3 ticks and a trigger: %d updates, fn got %v, failed got %v", calls, got, errs)
		}
		cancel()
		<-done

		calls = 0
		ctx, cancel = context.WithCancel(t.Context())
		done2 := make(chan struct{})
		go func() {
			Run(ctx, time.Minute, true, nil, update, func(int) {}, nil)
			close(done2)
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		if calls != 0 {
			t.Errorf("a pinned source was updated %d times", calls)
		}
		cancel()
		<-done2
	})
}
