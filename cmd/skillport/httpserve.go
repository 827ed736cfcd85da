package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/spf13/pflag"

	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/web"
)

// httpFlags adds the flags of the HTTP endpoint (see package endpoint) to
// a command that serves --http.
func httpFlags(f *pflag.FlagSet) {
	f.StringArray("allow-origin", nil, "also serve requests from the web `ORIGIN` (scheme://host[:port]; repeatable); other cross-origin requests get 403")
	f.Int("max-connections", endpoint.DefaultMaxConns, "refuse connections beyond `N` open at once with 503")
	f.StringArray("allow-host", nil, "also answer requests whose Host header names `HOST` (a name such as skills.example.com; repeatable); on a loopback address only localhost names are answered otherwise")
}

// httpOptions reads the endpoint flags, so that a bad one is a usage error
// before anything starts. what names the command in errors.
func httpOptions(f *pflag.FlagSet, what string) (*endpoint.Options, error) {
	origins, _ := f.GetStringArray("allow-origin")
	conns, _ := f.GetInt("max-connections")
	if conns <= 0 {
		return nil, usageErrorf("%s: --max-connections must be positive", what)
	}
	for _, o := range origins {
		if _, err := endpoint.ParseOrigin(o); err != nil {
			return nil, usageErrorf("%s: --allow-origin %q: %v", what, o, err)
		}
	}
	hosts, _ := f.GetStringArray("allow-host")
	for _, h := range hosts {
		if _, err := endpoint.ParseHost(h); err != nil {
			return nil, usageErrorf("%s: --allow-host %q: %v", what, h, err)
		}
	}
	return &endpoint.Options{AllowOrigins: origins, AllowHosts: hosts, MaxConns: conns, Logger: slog.Default()}, nil
}

// serveHTTP serves h at /mcp, with /healthz, /readyz and /metrics, behind
// the limits of package endpoint, on ln until ctx ends, then shuts down
// gracefully. what names the command in errors; extra routes (a webhook)
// are served beside /mcp behind the same limits.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, opts *endpoint.Options, what string, extra ...httpRoute) error {
	return serveHTTPWith(ctx, ln, h, opts, what, func(ep *endpoint.Endpoint) error {
		for _, r := range extra {
			ep.Handle(r.path, r.h)
		}
		return nil
	})
}

// serveHTTPWith is serveHTTP with more handlers: mount, when set, adds them
// to the endpoint before it starts.
func serveHTTPWith(ctx context.Context, ln net.Listener, h http.Handler, opts *endpoint.Options, what string, mount func(*endpoint.Endpoint) error) error {
	ep, err := endpoint.New(h, opts)
	if err == nil && mount != nil {
		err = mount(ep)
	}
	if err == nil {
		err = ep.Serve(ctx, ln)
	}
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("%s: %w", what, err)}
	}
	return nil
}

// mountWeb adds the web catalog and the discovery document of src (package
// web) to ep.
func mountWeb(ep *endpoint.Endpoint, src published.Source, log *slog.Logger) error {
	return mountWebWith(ep, src, &web.Options{MCPPath: ep.Options().Path, Logger: log})
}

// mountWebWith is mountWeb with the web catalog's options.
func mountWebWith(ep *endpoint.Endpoint, src published.Source, opts *web.Options) error {
	h, err := web.New(src, opts)
	if err != nil {
		return err
	}
	for _, p := range h.Routes() {
		ep.Handle(p, h)
	}
	return nil
}
