// Package sdklog adapts a logger for go-sdk, which logs every session's
// life ("server session connected", "session initialized") at INFO: one
// line per client is noise in an operator's log, so those records are
// lowered to DEBUG while warnings and errors keep their level.
package sdklog

import (
	"context"
	"log/slog"
)

// Quiet returns a logger writing to l's handler with go-sdk's INFO records
// lowered to DEBUG.
func Quiet(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(demote{l.Handler()})
}

type demote struct{ h slog.Handler }

func (d demote) Enabled(ctx context.Context, lvl slog.Level) bool {
	if lvl == slog.LevelInfo {
		lvl = slog.LevelDebug
	}
	return d.h.Enabled(ctx, lvl)
}

func (d demote) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return d.h.Handle(ctx, r)
}

func (d demote) WithAttrs(attrs []slog.Attr) slog.Handler { return demote{d.h.WithAttrs(attrs)} }
func (d demote) WithGroup(name string) slog.Handler       { return demote{d.h.WithGroup(name)} }
