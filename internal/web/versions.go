package web

import (
	"context"
	"net/http"
	"time"

	"github.com/skillport/skillport/catalog"
)

// VersionState is one version of a skill as its page shows it, for a
// source that keeps versions (a governed registry).
type VersionState struct {
	Version int
	// State is pending, approved or rejected (review), yanked, or
	// published (review off).
	State       string
	Current     bool
	PublishedBy string
	PublishedAt time.Time
	ReviewedBy  string
	// Reason is why it was rejected or yanked.
	Reason string
	Digest string
}

// VersionsFunc returns the versions of the skill at path, newest last.
// It is asked only for a skill the caller may see, so a version's state is
// shown to those allowed to see the skill and no one else.
type VersionsFunc func(ctx context.Context, path string) ([]VersionState, error)

// MaxVersionsShown bounds the versions a skill page lists (the latest).
const MaxVersionsShown = 50

// versionsSection is the skill page's list of versions.
type versionsSection struct {
	Rows []VersionState
	// Older counts the versions left out, oldest first.
	Older int
	// Pending is set when the version served has not been reviewed yet
	// (observe mode): the page says so above everything else.
	Pending bool
	Error   string
}

// versionsOf fills the skill page's versions section, when the source
// keeps versions.
func (h *Handler) versionsOf(r *http.Request, sk *catalog.Skill) *versionsSection {
	if h.opts.Versions == nil {
		return nil
	}
	vs, err := h.opts.Versions(r.Context(), sk.Path)
	if err != nil {
		h.log.Warn("web: reading versions", "skill", sk.Path, "err", err)
		return &versionsSection{Error: "The versions could not be read; reload the page."}
	}
	s := &versionsSection{}
	for _, v := range vs {
		if v.Current && v.State == "pending" {
			s.Pending = true
		}
	}
	if len(vs) > MaxVersionsShown {
		s.Older, vs = len(vs)-MaxVersionsShown, vs[len(vs)-MaxVersionsShown:]
	}
	// Newest first, as people read a history.
	for i := len(vs) - 1; i >= 0; i-- {
		s.Rows = append(s.Rows, vs[i])
	}
	return s
}
