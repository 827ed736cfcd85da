//go:build !skillport_no_index

package skillserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/wire"
)

// MaxIndexEntries, of the index profile, bounds skill://index.json, which
// has no paging: a catalog larger than this lists its first
// MaxIndexEntries skills (by URI) there, and every skill through
// skills/list.
const MaxIndexEntries = 5000

// index builds the index of a snapshot: one skill-md entry per skill,
// digest of its SKILL.md, frontmatter verbatim.
func index(snap published.Snapshot) wire.Index {
	skills := snap.Skills()
	ix := wire.Index{Schema: wire.IndexSchema, Skills: make([]wire.IndexEntry, 0, min(len(skills), MaxIndexEntries))}
	for _, sk := range skills {
		if len(ix.Skills) == MaxIndexEntries {
			break
		}
		e := wire.IndexEntry{Name: sk.Name, Type: wire.IndexTypeSkillMD, Description: sk.Frontmatter.Description(),
			URL: sk.URI, Frontmatter: sk.Frontmatter.JSON()}
		if f := snap.File(sk.URI); f != nil {
			e.Digest = f.Digest
		}
		ix.Skills = append(ix.Skills, e)
	}
	return ix
}

// readIndex answers resources/read skill://index.json from the caller's
// view: it lists exactly the skills skills/list would.
func (srv *Server) readIndex(ctx context.Context) (*ReadResourceResult, error) {
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(index(snap))
	if err != nil {
		return nil, internalError(wire.IndexURI, "cannot render %s", wire.IndexURI)
	}
	return &ReadResourceResult{
		ResultType: wire.ResultComplete,
		Contents:   []*mcp.ResourceContents{{URI: wire.IndexURI, MIMEType: "application/json", Text: string(b)}},
		TTLMs:      srv.ttlMs(),
		CacheScope: srv.opts.CacheScope,
	}, nil
}

// indexResource is the resources/list entry of the index.
func indexResource() *mcp.Resource {
	return &mcp.Resource{URI: wire.IndexURI, Name: "index.json", Title: "Agent Skills index",
		Description: "The skills this server serves, as an Agent Skills discovery index (name, description, SKILL.md URL and digest). Not a skill.",
		MIMEType:    "application/json",
		Annotations: &mcp.Annotations{Audience: []mcp.Role{"assistant"}, Priority: 0.5}}
}

// ProfileIndex publishes skill://index.json (seed 002, the gemini-cli and
// goose prototypes).
const ProfileIndex Profile = "index"

func init() { register(registration{1, ProfileIndex, newIndexPart}) }

// indexPart is the index profile's part of the hook.
type indexPart struct {
	noPart
	srv *Server
}

func newIndexPart(ps *profileSet) part { return indexPart{srv: ps.srv} }

// checkURI: the index is not a skill.
func (p indexPart) checkURI(uri string, _ bool) error {
	if uri == wire.IndexURI {
		return invalidParams(uri, "%s is the skill index, not a skill: read it with resources/read, or call skills/get with the url of one of its entries", uri)
	}
	return nil
}

// capabilities declares the extension under "experimental" too when it is
// served: the gemini-cli prototype looks for it there.
func (p indexPart) capabilities(c *mcp.ServerCapabilities) {
	if p.srv.ext {
		if c.Experimental == nil {
			c.Experimental = map[string]any{}
		}
		c.Experimental[wire.ExtensionID] = map[string]any{}
	}
}

func (indexPart) resource(uri string) bool   { return uri == wire.IndexURI }
func (indexPart) resources() []*mcp.Resource { return []*mcp.Resource{indexResource()} }
func (p indexPart) read(ctx context.Context, _ string) (*ReadResourceResult, error) {
	return p.srv.readIndex(ctx)
}

func (indexPart) reading() (reading, int) {
	return reading{"through the skill index resource " + wire.IndexURI,
		"Read " + wire.IndexURI + " for the list, then each skill's SKILL.md by its url."}, 1
}
