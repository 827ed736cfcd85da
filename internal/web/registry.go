package web

import (
	"context"
	"net/http"
	"time"

	"github.com/skillport/skillport/internal/scan"
)

// Registry is what a registry knows of its skills beyond their files: the
// versions, their review state and scan findings, and recent loads. The
// pages of a skill the caller may see show it; a catalog without a
// registry (a directory, git) shows nothing of it.
type Registry interface {
	// SkillInfo returns the versions and recent loads of the skill at
	// path; nil, nil for a skill the registry does not hold. It is asked
	// once per skill page, and only for a skill the caller may see, so a
	// version's state is shown to those allowed to see the skill and no
	// one else.
	SkillInfo(ctx context.Context, path string) (*SkillInfo, error)
	// RecentLoads returns the recent loads of each of paths (absent: none).
	RecentLoads(ctx context.Context, paths []string) (map[string]int64, error)
}

// SkillInfo is a skill as its registry knows it.
type SkillInfo struct {
	Versions []VersionInfo // newest first
	// Reviews are the same versions with their review state, newest
	// first (the versions section of a governed registry).
	Reviews []VersionState
	// Loads and Callers count the last LoadDays days, from every replica.
	Loads    int64
	Callers  int
	LoadDays int
}

// VersionInfo is one version of a skill.
type VersionInfo struct {
	Version     int
	State       string // current, yanked, or "" (an earlier version)
	PublishedBy string
	PublishedAt time.Time
	Scanned     bool // false: never scanned
	Findings    []scan.Finding
}

// addLoads fills in the recent loads of the catalog page's rows.
func (h *Handler) addLoads(r *http.Request, rows []row) {
	if h.opts.Registry == nil || len(rows) == 0 {
		return
	}
	paths := make([]string, len(rows))
	for i, rw := range rows {
		paths[i] = rw.Path
	}
	loads, err := h.opts.Registry.RecentLoads(r.Context(), paths)
	if err != nil {
		h.log.Warn("web: reading the registry's usage", "err", err)
		return
	}
	for i := range rows {
		rows[i].Loads = loads[rows[i].Path]
	}
}
