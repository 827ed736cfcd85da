package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// wellKnownCache holds the encoded discovery entries of the snapshots seen
// lately (one per distinct view, at most maxCachedViews), so that a
// request for the document of a large catalog costs a visibility check and
// a copy per skill, not an encoding. Each entry is kept in two halves
// around the start of its url, where the request's base URL goes (the
// Host header varies; the cache does not).
type wellKnownCache struct {
	mu   sync.Mutex
	byID map[string]*wellKnownDoc
}

type wellKnownDoc struct {
	skills  []*catalog.Skill
	entries [][2][]byte
}

// urlMark marks where the base URL goes in an encoded entry.
const urlMark = "\x00"

func (c *wellKnownCache) get(ctx context.Context, snap published.Snapshot, log *slog.Logger) ([]*catalog.Skill, [][2][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := snap.ID()
	if d := c.byID[id]; d != nil {
		return d.skills, d.entries
	}
	var skills []*catalog.Skill
	var entries [][2][]byte
	complete := true
	names := map[string]string{}
	for _, sk := range snap.Skills() {
		if len(sk.Files) == 0 {
			continue // a dynamic skill has no SKILL.md digest to publish
		}
		// A host installs a discovered skill under its name: two entries
		// of one name would leave it to pick. The first (by URI) is kept.
		if first, dup := names[sk.Name]; dup {
			log.Warn("web: discovery document: skill name already listed; leaving this one out (rename one of the two folders)", "name", sk.Name, "listed", first, "left_out", sk.Path)
			continue
		}
		names[sk.Name] = sk.Path
		e := wire.IndexEntry{Name: sk.Name, Type: wire.IndexTypeSkillMD,
			Description: sk.Frontmatter.Description(), URL: urlMark + "/raw/" + sk.Path + "/SKILL.md", Digest: sk.Files[0].Digest}
		if len(sk.Files) > 1 {
			data, err := skillArchive(ctx, snap, sk)
			if err != nil {
				// Left out this time, and not cached: the next request retries.
				log.Warn("web: packing skill for the discovery document", "uri", sk.URI, "err", err)
				complete = false
				continue
			}
			e.Type, e.URL, e.Digest = indexTypeArchive, urlMark+"/archive/"+sk.Path+archiveSuffix, digestOf(data)
		}
		// The entry's _meta is its skills/list entry's (the signature
		// bundle): a host reading the site without MCP verifies the same.
		e.Meta = skillserver.EntryMeta(sk)
		b, err := json.Marshal(e)
		// The mark follows the first "url":": an encoded string holds no
		// unescaped quote, so the description before it (which may hold
		// a NUL, by a YAML escape) cannot, and the _meta after it (which
		// may hold anything) comes later.
		i := bytes.Index(b, []byte(`"url":"\u0000`))
		if err != nil || i < 0 {
			continue
		}
		i += len(`"url":"`)
		skills, entries = append(skills, sk), append(entries, [2][]byte{b[:i], b[i+len(`\u0000`):]})
	}
	if complete {
		if c.byID == nil || len(c.byID) >= maxCachedViews {
			c.byID = map[string]*wellKnownDoc{}
		}
		c.byID[id] = &wellKnownDoc{skills, entries}
	}
	return skills, entries
}

// serveWellKnown answers the discovery document ([wire.Discovery]): per
// visible skill, a skill-md entry (url the SKILL.md download, digest that
// of SKILL.md's bytes) when SKILL.md is its only file, else an archive
// entry (url /archive/PATH.tar.gz, digest that of the archive's bytes), and mcp, the MCP endpoint (unless
// Options.NoMCP).
func (h *Handler) serveWellKnown(w http.ResponseWriter, r *http.Request) {
	base := baseURL(r)
	skills, entries := h.wk.get(r.Context(), h.snapshot(r), h.log)
	schema, _ := json.Marshal(wire.IndexSchema)
	mcp, _ := json.Marshal(base + h.opts.MCPPath)
	quoted, _ := json.Marshal(base)
	escBase := quoted[1 : len(quoted)-1]
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.WriteString(`{"$schema":`)
	bw.Write(schema)
	if !h.opts.NoMCP {
		bw.WriteString(`,"mcp":`)
		bw.Write(mcp)
	}
	bw.WriteString(`,"skills":[`)
	first := true
	for i, sk := range skills {
		if !h.opts.Visible(r, sk) {
			continue
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		bw.WriteString("\n")
		bw.Write(entries[i][0])
		bw.Write(escBase)
		bw.Write(entries[i][1])
	}
	bw.WriteString("\n]}\n")
	bw.Flush()
}
