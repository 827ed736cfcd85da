package host

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/gitsource"
	"github.com/skillport/skillport/server"
	"github.com/skillport/skillport/skill"
)

// openGit mirrors a Git origin's commit and serves it to the host through
// an in-process skillport server, so that everything downstream (listing,
// verification against the published digests, pull) is what it is for any
// MCP server. Skills the catalog leaves out become warnings.
func (o *originState) openGit(ctx context.Context) (mcp.Transport, error) {
	spec, err := gitsource.ParseSpec(o.cfg.Git)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	src, err := gitsource.Open(ctx, spec, &gitsource.Options{CacheDir: o.h.opts.GitCacheDir, Logger: o.h.log,
		Catalog: &catalog.Options{Logger: quiet}})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if st := src.Status(); st.Err != "" {
		o.diag(Warning, "", fmt.Sprintf("%s: the remote failed (%s); using the mirrored commit %s", spec, st.Err, st.Commit), nil)
	}
	cat := src.Catalog()
	for _, d := range cat.Diagnostics() {
		if d.Severity == skill.Error || d.Rule == catalog.RuleSpecialFile {
			o.diag(Warning, "", fmt.Sprintf("%s: skipped %s: %s", spec, d.Path, d.Message), d.Err)
		}
	}
	s, _, err := server.New(&mcp.Implementation{Name: "skillport-git", Version: src.Status().Commit[:12]},
		server.NewCatalogSource(cat), &server.Options{Logger: quiet})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, spec, err)
	}
	client, srv := mcp.NewInMemoryTransports()
	// The session lives as long as the host's connection, not ctx.
	if _, err := s.Connect(context.WithoutCancel(ctx), srv, nil); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, spec, err)
	}
	return client, nil
}
