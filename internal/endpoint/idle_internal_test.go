package endpoint

import (
	"net/http"
	"testing"
	"time"
)

// TestIdleOrder: the connection idle the longest yields first; a new
// connection counts as idle only after newGrace without a request, and a
// busy one never does.
func TestIdleOrder(t *testing.T) {
	s := newIdleConns()
	fresh, kept, busy := &countedConn{}, &countedConn{}, &countedConn{}
	s.set(fresh, http.StateNew)
	s.set(kept, http.StateNew)
	s.set(kept, http.StateActive)
	s.set(kept, http.StateIdle)
	s.set(busy, http.StateNew)
	s.set(busy, http.StateActive)
	now := time.Now()
	if c := s.oldest(now); c != kept {
		t.Fatalf("first to yield: %p, want the keep-alive connection %p (the new one is in its grace)", c, kept)
	}
	if c := s.oldest(now); c != nil {
		t.Fatalf("second to yield within the grace: %p, want none", c)
	}
	if c := s.oldest(now.Add(newGrace)); c != fresh {
		t.Fatalf("after the grace: %p, want the silent new connection %p", c, fresh)
	}
	if c := s.oldest(now.Add(time.Hour)); c != nil {
		t.Fatalf("a busy connection yielded: %p", c)
	}
}
