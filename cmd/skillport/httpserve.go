package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/spf13/pflag"

	"github.com/skillport/skillport/endpoint"
	"github.com/skillport/skillport/server"
)

// httpFlags adds the flags of the HTTP endpoint (see package endpoint) to
// a command that serves --http.
func httpFlags(f *pflag.FlagSet) {
	f.StringArray("allow-origin", nil, "also serve requests from the web `ORIGIN` (scheme://host[:port]; repeatable); other cross-origin requests get 403")
	f.Int("max-connections", endpoint.DefaultMaxConns, "refuse connections beyond `N` open at once with 503")
}

// serveHTTP serves h at /mcp, with /healthz, /readyz and /metrics, behind
// the limits of package endpoint, on ln until ctx ends, then shuts down
// gracefully. src (optional) and ready (optional) feed /readyz and the
// snapshot metrics. what names the command in errors.
func serveHTTP(ctx context.Context, f *pflag.FlagSet, ln net.Listener, h http.Handler, src server.Source, ready func(context.Context) error, what string) error {
	origins, _ := f.GetStringArray("allow-origin")
	conns, _ := f.GetInt("max-connections")
	if conns <= 0 {
		return usageErrorf("%s: --max-connections must be positive", what)
	}
	ep, err := endpoint.New(h, &endpoint.Options{
		AllowOrigins: origins,
		MaxConns:     conns,
		Source:       src,
		Ready:        ready,
		Logger:       slog.Default(),
	})
	if err != nil {
		return usageErrorf("%s: --allow-origin: %v", what, err)
	}
	if err := ep.Serve(ctx, ln); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("%s: %w", what, err)}
	}
	return nil
}
