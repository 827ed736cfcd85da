package skillserver_test

import (
	"testing"

	"github.com/skillport/skillport/internal/published"
)

// Callbacks run in registration order, outside the lock: one may cancel
// itself, and a cancelled one is not called again.
func TestChangeFeed(t *testing.T) {
	var f published.ChangeFeed
	var got []int
	var cancel1 func()
	cancel1 = f.OnChange(func(_, _ published.Snapshot) { got = append(got, 1); cancel1() })
	f.OnChange(func(_, _ published.Snapshot) { got = append(got, 2) })
	cancel3 := f.OnChange(func(_, _ published.Snapshot) { got = append(got, 3) })
	cancel3()
	f.Notify(nil, nil)
	f.Notify(nil, nil)
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 2 {
		t.Fatalf("calls %v, want [1 2 2]", got)
	}
}
