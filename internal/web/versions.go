package web

import "time"

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
}

// versionsOf is the skill page's versions section of a registry's
// skill, newest first.
func versionsOf(info *SkillInfo) *versionsSection {
	if info == nil || info.Reviews == nil {
		return nil
	}
	vs := info.Reviews
	s := &versionsSection{}
	for _, v := range vs {
		if v.Current && v.State == "pending" {
			s.Pending = true
		}
	}
	if len(vs) > MaxVersionsShown {
		s.Older, vs = len(vs)-MaxVersionsShown, vs[:MaxVersionsShown]
	}
	s.Rows = vs
	return s
}
