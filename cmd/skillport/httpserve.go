package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// serveHTTP serves h at /mcp on ln until ctx ends, then shuts down
// gracefully (in-flight requests get 5 s). what names the command in errors.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, what string, extra ...httpRoute) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	for _, r := range extra {
		mux.Handle(r.path, r.h)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return &exitError{code: 1, err: fmt.Errorf("%s: %w", what, err)}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	return nil
}
