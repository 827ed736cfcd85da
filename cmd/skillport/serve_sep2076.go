//go:build !skillport_no_sep2076

package main

import (
	"context"
	"log/slog"

	"github.com/skillport/skillport/skillserver"
)

// serve's share of the sep2076 profile: skillport serve registers no tools
// or prompts, so every SEP-2076 dependency on one is logged at start, so
// that the operator knows.
func init() {
	checkDependencies = func(ctx context.Context, s *skillserver.Server, log *slog.Logger) {
		if _, err := s.CheckDependencies(ctx); err != nil {
			log.Warn("cannot check skill dependencies", "err", err)
		}
	}
}
