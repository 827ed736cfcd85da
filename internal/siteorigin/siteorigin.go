// Package siteorigin lets a host read the skills of a web site that
// publishes an Agent Skills discovery document but no MCP endpoint: the
// skills host.FetchSite downloaded and checked against the document's
// digests are built into a catalog and served to the host by an
// in-process skillport server, so that listing, verification and pull
// are the code paths of every MCP origin. The signature bundles the
// document carries sit where the catalog reads a source's, so the
// server carries them in its entries and the host's trust policy
// verifies them as it verifies any server's. Like package gitorigin it sits
// above both the publishing side (server) and the consuming side (host),
// so that host itself never depends on a server.
package siteorigin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/signature"
	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillserver"
)

// Options configures [Open].
type Options struct {
	// Client makes the downloads; nil means http.DefaultClient.
	Client *http.Client
	// Headers are sent to the site's own origin only.
	Headers map[string]string
	// Limits bounds the downloads; nil means host's defaults.
	Limits *host.SiteOptions
}

// Open reads the skills of site over HTTP(S) and returns a transport to
// an in-process skillport server publishing them (each Connect a new
// in-memory session), with
// one warning for each entry that was refused (bad digest, oversized,
// unsafe archive…) or that the catalog left out (invalid SKILL.md). It
// fails only when not one skill could be read from a document that lists
// some.
func Open(ctx context.Context, site *host.Site, opts *Options) (mcp.Transport, []string, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	var limits host.SiteOptions
	if o.Limits != nil {
		limits = *o.Limits
	}
	if limits.SkillDir == nil {
		limits.SkillDir = signedDir
	}
	tree, errs := host.FetchSite(ctx, o.Client, site, o.Headers, &limits)
	var warnings []string
	for _, err := range errs {
		warnings = append(warnings, fmt.Sprintf("%s: %v", site.URL, err))
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cat, err := catalog.Open(tree, &catalog.Options{Logger: quiet})
	if err != nil {
		return nil, warnings, fmt.Errorf("%s: %v", site.URL, err)
	}
	for _, d := range cat.Diagnostics() {
		if d.Severity == skill.Error || d.Rule == catalog.RuleSpecialFile {
			warnings = append(warnings, fmt.Sprintf("%s: skipped %s: %s", site.URL, d.Path, d.Message))
		}
	}
	if len(site.Doc.Skills) > 0 && len(cat.Skills()) == 0 {
		return nil, warnings, fmt.Errorf("%w: %s: none of its %d skills could be read (the warnings say why)", host.ErrDiscovery, site.URL, len(site.Doc.Skills))
	}
	s, _, err := skillserver.New(&mcp.Implementation{Name: "skillport-site", Version: "0.2.0"},
		published.NewCatalogSource(cat), &skillserver.Options{Logger: quiet})
	if err != nil {
		return nil, warnings, fmt.Errorf("%s: %v", site.URL, err)
	}
	return &transport{s: s}, warnings, nil
}

// transport connects each time to a new session of the in-process server,
// so that one origin serves every host built from it (ls, then verify…).
type transport struct{ s *mcp.Server }

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	client, srv := mcp.NewInMemoryTransports()
	// The session lives as long as the host's connection, not ctx.
	if _, err := t.s.Connect(context.WithoutCancel(ctx), srv, nil); err != nil {
		return nil, err
	}
	return client.Connect(ctx)
}

// signedDir is the folder of the skill a bundle's statement names
// (skill://acme/pdf/SKILL.md: acme/pdf), "" when it names none: the
// signature binds the skill's path, which the document does not give.
func signedDir(_ string, bundle []byte) string {
	uri, err := signature.SubjectURI(bundle)
	if err != nil || !strings.HasPrefix(uri, "skill://") {
		return ""
	}
	sk, err := skilluri.ParseSkill(uri)
	if err != nil {
		return ""
	}
	return strings.Join(sk.Path, "/")
}
