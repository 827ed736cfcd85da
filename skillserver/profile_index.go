package skillserver

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/wire"
)

// MaxIndexEntries bounds skill://index.json, which has no paging: a catalog
// larger than this lists its first MaxIndexEntries skills (by URI) there,
// and every skill through skills/list.
const MaxIndexEntries = 5000

// index builds the index of a snapshot: one skill-md entry per skill,
// digest of its SKILL.md, frontmatter verbatim.
func index(snap Snapshot) wire.Index {
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

// initializeResult and discoverResult add the top-level "skills" capability
// of SEP-2076 and seed 001, which go-sdk's ServerCapabilities has no field
// for. Embedding the go-sdk result keeps every method go-sdk calls on
// it (resultType and _meta for 2026-07-28 requests); only the JSON changes.
type initializeResult struct {
	*mcp.InitializeResult
	skills wire.LegacyCapability
}

// MarshalJSON writes the result with capabilities.skills added.
func (r *initializeResult) MarshalJSON() ([]byte, error) {
	return addCapability(r.InitializeResult, r.skills)
}

type discoverResult struct {
	*mcp.DiscoverResult
	skills wire.LegacyCapability
}

// MarshalJSON writes the result with capabilities.skills added.
func (r *discoverResult) MarshalJSON() ([]byte, error) {
	return addCapability(r.DiscoverResult, r.skills)
}

// addCapability marshals res and splices "skills" into its capabilities,
// members otherwise as go-sdk wrote them (once per connection, so without
// a round trip through maps).
func addCapability(res any, c wire.LegacyCapability) ([]byte, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	skills, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	fields, err := jsonobj.Fields(b)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(b) + len(skills) + 32)
	member := func(first bool, key string, value []byte) {
		if !first {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(value)
	}
	out.WriteByte('{')
	top, hasCaps := 0, false
	for _, f := range fields {
		if f.Key != "capabilities" {
			member(top == 0, f.Key, f.Value)
			top++
			continue
		}
		if string(f.Value) == "null" {
			continue // written below, with skills alone
		}
		hasCaps = true
		caps, err := jsonobj.Fields(f.Value)
		if err != nil {
			return nil, err
		}
		member(top == 0, f.Key, nil)
		top++
		out.WriteByte('{')
		n := 0
		for _, cf := range caps {
			if cf.Key != "skills" {
				member(n == 0, cf.Key, cf.Value)
				n++
			}
		}
		member(n == 0, "skills", skills)
		out.WriteByte('}')
	}
	if !hasCaps {
		member(top == 0, "capabilities", append(append([]byte(`{"skills":`), skills...), '}'))
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// decorate wraps an initialize or server/discover result so that it
// carries the legacy capability when a legacy profile is served.
func (p *profileSet) decorate(res mcp.Result) mcp.Result {
	if !p.legacyCapability() {
		return res
	}
	c := wire.LegacyCapability{ListChanged: true, Scripts: p.execute}
	switch r := res.(type) {
	case *mcp.InitializeResult:
		return &initializeResult{InitializeResult: r, skills: c}
	case *mcp.DiscoverResult:
		return &discoverResult{DiscoverResult: r, skills: c}
	}
	return res
}

// capabilities declares the extension under "experimental" too when the
// index is served beside it: the gemini-cli prototype looks for it there.
func (p *profileSet) capabilities(c *mcp.ServerCapabilities) {
	if p.index && p.srv.ext {
		if c.Experimental == nil {
			c.Experimental = map[string]any{}
		}
		c.Experimental[wire.ExtensionID] = map[string]any{}
	}
}

// resource reports whether uri is the index.
func (p *profileSet) resource(uri string) bool { return p.index && uri == wire.IndexURI }

// resources lists the index when it is served.
func (p *profileSet) resources() []*mcp.Resource {
	if !p.index {
		return nil
	}
	return []*mcp.Resource{indexResource()}
}

// read answers resources/read of the index.
func (p *profileSet) read(ctx context.Context, uri string) (*ReadResourceResult, error) {
	return p.srv.readIndex(ctx)
}
