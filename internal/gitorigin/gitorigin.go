// Package gitorigin lets a host read the skills of a git source as it reads
// any MCP server's: the commit is mirrored (package gitsource), built into
// a catalog and served to the host by an in-process skillport server, so
// listing, verification against the published digests and pull are the
// same code paths. It sits beside the gateway, above both the publishing
// side (server, gitsource) and the consuming side (host), so that host
// itself never depends on a server.
package gitorigin

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillserver"
)

// Options configures [Opener].
type Options struct {
	// CacheDir holds the mirrors; "" means gitsource.DefaultCacheDir().
	CacheDir string
	// Logger receives fetch progress; nil means slog.Default().
	Logger *slog.Logger
}

// Opener returns a function for host.Options.OpenGit: it mirrors the
// source spec (git+URL[@REF][#SUBDIR]), builds its commit's catalog and
// returns the client end of an in-memory connection to a skillport server
// publishing it, with one warning for each skill the catalog left out and
// for a remote that failed while a mirrored commit could still be served.
func Opener(opts *Options) func(ctx context.Context, spec string) (mcp.Transport, []string, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return func(ctx context.Context, specText string) (mcp.Transport, []string, error) {
		spec, err := gitsource.ParseSpec(specText)
		if err != nil {
			return nil, nil, err
		}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		src, err := gitsource.Open(ctx, spec, &gitsource.Options{CacheDir: o.CacheDir, Logger: o.Logger,
			Catalog: &catalog.Options{Logger: quiet}})
		if err != nil {
			return nil, nil, err
		}
		var warnings []string
		if st := src.Status(); st.Err != "" {
			warnings = append(warnings, fmt.Sprintf("%s: the remote failed (%s); using the mirrored commit %s", spec, st.Err, st.Commit))
		}
		cat := src.Catalog()
		for _, d := range cat.Diagnostics() {
			if d.Severity == skill.Error || d.Rule == catalog.RuleSpecialFile {
				warnings = append(warnings, fmt.Sprintf("%s: skipped %s: %s", spec, d.Path, d.Message))
			}
		}
		s, _, err := skillserver.New(&mcp.Implementation{Name: "skillport-git", Version: src.Status().Commit[:12]},
			skillserver.NewCatalogSource(cat), &skillserver.Options{Logger: quiet})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", spec, err)
		}
		client, srv := mcp.NewInMemoryTransports()
		// The session lives as long as the host's connection, not ctx.
		if _, err := s.Connect(context.WithoutCancel(ctx), srv, nil); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", spec, err)
		}
		return client, warnings, nil
	}
}
