package ocisource

import (
	"context"
	"fmt"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/poll"
)

// DefaultPoll is how often Watch re-resolves a tag when no interval is given.
const DefaultPoll = time.Minute

// Update re-resolves a tag once and, if it names another digest, fetches
// the new artifact (only the manifests and files the current snapshot
// lacks, with the same checks as Open) and returns its catalog with changed set. A digest
// reference never moves and is not resolved again. On failure the current
// catalog stays.
func (s *Source) Update(ctx context.Context) (c *catalog.Catalog, changed bool, err error) {
	s.update.Lock()
	defer s.update.Unlock()
	cur := s.Catalog()
	if s.ref.Pinned() {
		return cur, false, nil
	}
	top, err := s.resolve(ctx)
	if err != nil {
		return cur, false, err
	}
	if top.Digest.String() == s.Digest() {
		return cur, false, nil
	}
	tree, blobs, arts, err := s.fetch(ctx, top)
	if err != nil {
		return cur, false, err
	}
	// Files keep their blob digest as content id: the new snapshot
	// re-hashes only the files that changed.
	next, err := cur.ReloadFS(tree)
	if err != nil {
		return cur, false, fmt.Errorf("%s: %w", s.ref, err)
	}
	s.mu.Lock()
	s.digest, s.cat, s.blobs, s.arts = top.Digest.String(), next, blobs, arts
	s.mu.Unlock()
	return next, true, nil
}

// Watch calls Update every poll interval (zero means DefaultPoll) until
// ctx ends, and fn with each new catalog, from one goroutine. For a
// digest reference it only waits for ctx. Failures are logged; the last
// good catalog stays current.
func (s *Source) Watch(ctx context.Context, every time.Duration, fn func(*catalog.Catalog)) {
	if every <= 0 {
		every = DefaultPoll
	}
	poll.Run(ctx, every, s.ref.Pinned(), nil, s.Update, func(c *catalog.Catalog) {
		s.log.Info("oci source moved", "source", s.ref.String(), "digest", s.Digest())
		fn(c)
	}, func(err error) {
		s.log.Warn("oci source: update failed; serving the last good snapshot", "source", s.ref.String(), "err", err)
	})
}
