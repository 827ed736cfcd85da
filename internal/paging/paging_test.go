package paging

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestWalkIsBounded: whatever the server answers, a walk makes a bounded
// number of calls and ends saying why.
func TestWalkIsBounded(t *testing.T) {
	refused := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "stale cursor"}
	for _, tc := range []struct {
		name      string
		opts      Options
		page      func(n int, cursor string) (string, error)
		wantCalls int
		wantErr   error
		restarts  int
	}{
		{"ends without a cursor", Options{}, func(n int, _ string) (string, error) {
			if n < 3 {
				return fmt.Sprint(n), nil
			}
			return "", nil
		}, 3, nil, 0},
		{"endless cursors", Options{MaxPages: 5}, func(n int, _ string) (string, error) { return fmt.Sprint(n), nil }, 5, ErrTooManyPages, 0},
		{"repeated cursor", Options{}, func(int, string) (string, error) { return "same", nil }, 2, ErrRepeatedCursor, 0},
		{"refused cursor, no restart", Options{}, func(n int, _ string) (string, error) {
			if n == 2 {
				return "", refused
			}
			return "c", nil
		}, 2, refused, 0},
		{"refused cursor forever", Options{Restarts: 3}, func(n int, cursor string) (string, error) {
			if cursor != "" {
				return "", refused
			}
			return "c", nil
		}, 8, refused, 3},
		{"first page refused is no restart", Options{Restarts: 3}, func(int, string) (string, error) { return "", refused }, 1, refused, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, restarts := 0, 0
			var last error
			for _, err := range Walk(context.Background(), "x/list", tc.opts, func(_ context.Context, cursor string) (int, string, error) {
				calls++
				next, err := tc.page(calls, cursor)
				return calls, next, err
			}) {
				if errors.Is(err, ErrRestarted) {
					restarts++
					continue
				}
				if err != nil {
					last = err
				}
			}
			if calls != tc.wantCalls || restarts != tc.restarts || !errors.Is(last, tc.wantErr) || (tc.wantErr == nil) != (last == nil) {
				t.Fatalf("%d calls, %d restarts, %v; want %d, %d, %v", calls, restarts, last, tc.wantCalls, tc.restarts, tc.wantErr)
			}
			var pe *Error
			if last != nil && (!errors.As(last, &pe) || pe.Method != "x/list" || pe.Page < 1) {
				t.Errorf("error %v does not name the method and page", last)
			}
		})
	}
}
