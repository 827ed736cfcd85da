package web

import (
	"net/http"

	"github.com/skillport/skillport/catalog"
)

// Search exposes the catalog search to the benchmarks.
func (h *Handler) Search(r *http.Request, q string, limit int) []*catalog.Skill {
	return h.search(r, h.snapshot(r), q, limit)
}
