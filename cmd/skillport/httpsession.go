package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/skillserver"
)

// httpSessionFlags adds the session limits of the Streamable HTTP endpoint.
func httpSessionFlags(c *cobra.Command) {
	f := c.Flags()
	f.Duration("session-timeout", skillserver.DefaultSessionTimeout, "with --http, close a session of a client older than protocol 2026-07-28 after this long without a request or open stream (0 = never)")
	f.Int("max-sessions", skillserver.DefaultMaxSessions, "with --http, the most sessions held at once; beyond it initialize gets HTTP 503 (0 = no cap)")
}

// sessionOptions reads the session flags into the handler options.
func sessionOptions(c *cobra.Command, cmd, addr string, stateless bool, log *slog.Logger) (*skillserver.HTTPOptions, error) {
	f := c.Flags()
	timeout, _ := f.GetDuration("session-timeout")
	maxSessions, _ := f.GetInt("max-sessions")
	switch {
	case timeout < 0:
		return nil, usageErrorf("%s: --session-timeout must not be negative (0 means never)", cmd)
	case maxSessions < 0:
		return nil, usageErrorf("%s: --max-sessions must not be negative (0 means no cap)", cmd)
	case addr == "" && (f.Changed("session-timeout") || f.Changed("max-sessions")):
		return nil, usageErrorf("%s: --session-timeout and --max-sessions apply to --http only", cmd)
	}
	// The endpoint in front applies the Host policy (--allow-host) to every
	// route, /mcp included.
	o := &skillserver.HTTPOptions{Stateless: stateless, SessionTimeout: timeout, MaxSessions: maxSessions, Logger: log, HostChecked: true}
	if timeout == 0 {
		o.SessionTimeout = -1
	}
	if maxSessions == 0 {
		o.MaxSessions = -1
	}
	return o, nil
}
