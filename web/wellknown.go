package web

import (
	"encoding/json"
	"net/http"

	"github.com/skillport/skillport/wire"
)

func (h *Handler) serveWellKnown(w http.ResponseWriter, r *http.Request) {
	snap := h.src.Snapshot()
	base := baseURL(r)
	d := wire.Discovery{Schema: wire.IndexSchema, Skills: []wire.IndexEntry{}, MCP: base + h.opts.MCPPath}
	for _, sk := range snap.Skills() {
		if len(sk.Files) == 0 || !h.opts.Visible(r, sk) {
			continue // a dynamic skill has no SKILL.md digest to publish
		}
		d.Skills = append(d.Skills, wire.IndexEntry{Name: sk.Name, Type: wire.IndexTypeSkillMD,
			Description: sk.Frontmatter.Description(), URL: base + "/raw/" + sk.Path + "/SKILL.md", Digest: sk.Files[0].Digest})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(d)
}
