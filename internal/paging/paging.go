// Package paging walks the paginated methods of MCP (a cursor in, a
// nextCursor out) for every client of skillport: skills/list, the legacy
// profiles' listings, resources/directory/read. One loop bounds them all:
// a page count, a deadline per page, a cursor never followed twice, and a
// bounded restart when the server refuses a cursor because what it lists
// changed between pages.
package paging

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// DefaultMaxPages bounds how many pages a walk reads, so that a server
// handing out cursors forever cannot keep a client busy.
const DefaultMaxPages = 100

// Errors a walk ends (or, for ErrRestarted, goes on) with; test with
// errors.Is.
var (
	// ErrTooManyPages: the server still sent a cursor after MaxPages pages.
	ErrTooManyPages = errors.New("the server sent more pages than the client reads")
	// ErrRepeatedCursor: the server sent a cursor it had sent before, which
	// would loop.
	ErrRepeatedCursor = errors.New("the server returned a cursor it had already returned")
	// ErrRestarted: the server refused the cursor of a later page as
	// invalid (its listing changed while it was read). The pages yielded
	// so far are stale; the walk starts again from the first page.
	ErrRestarted = errors.New("the server refused the cursor (what it lists changed while listing); listing again from the start")
)

// Options bound a walk. The zero value reads up to DefaultMaxPages pages,
// with no deadline of its own per page and no restart.
type Options struct {
	// MaxPages bounds the pages read; zero means DefaultMaxPages.
	MaxPages int
	// CallTimeout bounds each page's call; zero means only ctx's.
	CallTimeout time.Duration
	// Restarts is how often a walk starts over after a refused cursor.
	Restarts int
}

// Error is a walk's failure: the page (from 1) and what happened.
type Error struct {
	// Method is the paginated method.
	Method string
	// Page is the page that failed or stopped the walk, from 1.
	Page int
	// Err is the call's error, or one of the sentinel errors.
	Err error
	// TimedOut is set when the page got no answer within CallTimeout.
	TimedOut bool
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s page %d: %v", e.Method, e.Page, e.Err)
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Call fetches the page at cursor ("" for the first) and returns it with
// its nextCursor.
type Call[R any] func(ctx context.Context, cursor string) (page R, next string, err error)

// Walk yields the pages of method as the loop asks for more. A failed call
// ends it with an [*Error]; so do ErrTooManyPages and ErrRepeatedCursor. An
// [*Error] wrapping ErrRestarted is yielded before the walk starts again.
func Walk[R any](ctx context.Context, method string, o Options, call Call[R]) iter.Seq2[R, error] {
	max := o.MaxPages
	if max <= 0 {
		max = DefaultMaxPages
	}
	return func(yield func(R, error) bool) {
		var zero R
		restarts := 0
		cursor := ""
		seen := map[string]bool{}
		for page := 1; ; page++ {
			if page > max {
				yield(zero, &Error{Method: method, Page: page, Err: ErrTooManyPages})
				return
			}
			callCtx, cancel := ctx, context.CancelFunc(func() {})
			if o.CallTimeout > 0 {
				callCtx, cancel = context.WithTimeout(ctx, o.CallTimeout)
			}
			res, next, err := call(callCtx, cursor)
			timedOut := callCtx.Err() != nil
			cancel()
			if err != nil {
				// A cursor is the only thing a later page sends that the
				// first did not, so invalid params there means the server
				// published a new snapshot between pages and refused the
				// old cursor (the Skills Extension lets it). Pages of two
				// snapshots must not be mixed.
				if page > 1 && !timedOut && isInvalidParams(err) && restarts < o.Restarts {
					restarts++
					if !yield(zero, &Error{Method: method, Page: page, Err: fmt.Errorf("%w: %w", ErrRestarted, err)}) {
						return
					}
					cursor, seen, page = "", map[string]bool{}, 0
					continue
				}
				yield(zero, &Error{Method: method, Page: page, Err: err, TimedOut: timedOut})
				return
			}
			if !yield(res, nil) || next == "" {
				return
			}
			if seen[next] {
				yield(zero, &Error{Method: method, Page: page, Err: ErrRepeatedCursor})
				return
			}
			seen[next] = true
			cursor = next
		}
	}
}

func isInvalidParams(err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams
}
