// Package gitorigin lets a host read the skills of a git source or an OCI
// reference as it reads any MCP server's: the commit is mirrored (package
// gitsource) or the artifacts fetched and checked (package ocisource),
// built into a catalog and served to the host by an in-process skillport
// server, so listing, verification against the published digests and
// pull are the same code paths. It sits beside the gateway, above both the
// publishing side (server, gitsource, ocisource) and the consuming side
// (host), so that host itself never depends on a server or on git and
// registry clients.
package gitorigin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/internal/ocisource"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillserver"
)

// Options configures [Opener] and [OCIOpener].
type Options struct {
	// CacheDir holds the mirrors, and OCI blobs in CacheDir/oci; "" means
	// gitsource.DefaultCacheDir() and ocisource.DefaultCacheDir().
	CacheDir string
	// Logger receives fetch progress; nil means slog.Default().
	Logger *slog.Logger
	// OCI configures how registries are reached (OCIOpener).
	OCI *ocisource.Options
	// RecheckTags asks a git remote whether a tag the mirror already
	// holds has moved (gitsource.Options.RecheckTags): set by the commands
	// that compare with upstream (install SOURCE, outdated, update), not by
	// those that read what was mirrored.
	RecheckTags bool
}

func (opts *Options) defaults() Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// quiet discards the catalog's and server's logs: what a host shows of a
// source is the warnings returned.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Opener returns a function for host.Options.OpenGit: it mirrors the
// source spec (git+URL[@REF][#SUBDIR]), builds its commit's catalog and
// returns the client end of an in-memory connection to a skillport server
// publishing it, with one warning for each skill the catalog left out and
// for a remote that failed while a mirrored commit could still be served.
func Opener(opts *Options) func(ctx context.Context, spec string) (mcp.Transport, []string, error) {
	o := opts.defaults()
	return func(ctx context.Context, specText string) (mcp.Transport, []string, error) {
		spec, err := gitsource.ParseSpec(specText)
		if err != nil {
			return nil, nil, err
		}
		src, err := gitsource.Open(ctx, spec, &gitsource.Options{CacheDir: o.CacheDir, Logger: o.Logger,
			Catalog: &catalog.Options{Logger: quiet}, RecheckTags: o.RecheckTags})
		if err != nil {
			return nil, nil, err
		}
		var warnings []string
		if st := src.Status(); st.Err != "" {
			warnings = append(warnings, fmt.Sprintf("%s: the remote failed (%s); using the mirrored commit %s", spec, st.Err, st.Commit))
		}
		return serve(ctx, spec.String(), "skillport-git", src.Status().Commit[:12], src.Catalog(), warnings)
	}
}

// OCIOpener returns a function for host.Options.OpenOCI: it fetches the
// reference (oci://REGISTRY/REPOSITORY[:TAG|@DIGEST]) with every check of
// package ocisource, and serves its catalog as Opener serves a commit's.
func OCIOpener(opts *Options) func(ctx context.Context, ref string) (mcp.Transport, []string, error) {
	o := opts.defaults()
	return func(ctx context.Context, refText string) (mcp.Transport, []string, error) {
		ref, err := ocisource.ParseRef(refText)
		if err != nil {
			return nil, nil, err
		}
		var oo ocisource.Options
		if o.OCI != nil {
			oo = *o.OCI
		}
		oo.Logger = o.Logger
		if oo.CacheDir == "" {
			// Blobs are kept beside the mirrors, or in the user cache.
			if o.CacheDir != "" {
				oo.CacheDir = filepath.Join(o.CacheDir, "oci")
			} else {
				oo.CacheDir, _ = ocisource.DefaultCacheDir()
			}
		}
		src, err := ocisource.Open(ctx, ref, &oo, &catalog.Options{Logger: quiet})
		if err != nil {
			return nil, nil, err
		}
		return serve(ctx, ref.String(), "skillport-oci", src.Digest(), src.Catalog(), nil)
	}
}

// serve returns the client end of an in-memory connection to a skillport
// server publishing cat, with warnings and one more for each skill the
// catalog left out.
func serve(ctx context.Context, name, server, version string, cat *catalog.Catalog, warnings []string) (mcp.Transport, []string, error) {
	for _, d := range cat.Diagnostics() {
		if d.Severity == skill.Error || d.Rule == catalog.RuleSpecialFile {
			warnings = append(warnings, fmt.Sprintf("%s: skipped %s: %s", name, d.Path, d.Message))
		}
	}
	s, _, err := skillserver.New(&mcp.Implementation{Name: server, Version: version},
		published.NewCatalogSource(cat), &skillserver.Options{Logger: quiet})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", name, err)
	}
	client, srv := mcp.NewInMemoryTransports()
	// The session lives as long as the host's connection, not ctx.
	if _, err := s.Connect(context.WithoutCancel(ctx), srv, nil); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", name, err)
	}
	return client, warnings, nil
}
