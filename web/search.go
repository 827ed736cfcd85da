package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/server"
)

// searchCache holds the lowercased search text of the last snapshot seen,
// built once per snapshot.
type searchCache struct {
	mu   sync.Mutex
	id   string
	text []string
}

func (c *searchCache) get(snap server.Snapshot) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id != snap.ID() || c.text == nil {
		skills := snap.Skills()
		text := make([]string, len(skills))
		for i, sk := range skills {
			text[i] = strings.ToLower(sk.Path + "\x00" + sk.Frontmatter.Description())
		}
		c.id, c.text = snap.ID(), text
	}
	return c.text
}

// search returns the visible skills matching every word of q in their path,
// name or description (case-insensitive), those whose name matches a word
// first, in catalog order otherwise. limit < 0 means all.
func (h *Handler) search(r *http.Request, snap server.Snapshot, q string, limit int) []*catalog.Skill {
	skills := snap.Skills()
	words := strings.Fields(strings.ToLower(q))
	var first, rest []*catalog.Skill
	if len(words) == 0 {
		for _, sk := range skills {
			if limit >= 0 && len(first) >= limit {
				break
			}
			if h.opts.Visible(r, sk) {
				first = append(first, sk)
			}
		}
		return first
	}
	text := h.idx.get(snap)
	for i, sk := range skills {
		t := text[i]
		ok := true
		for _, w := range words {
			if !strings.Contains(t, w) {
				ok = false
				break
			}
		}
		if !ok || !h.opts.Visible(r, sk) {
			continue
		}
		if strings.Contains(sk.Name, words[0]) {
			first = append(first, sk)
		} else {
			rest = append(rest, sk)
		}
		if limit >= 0 && len(first) >= limit {
			break
		}
	}
	out := append(first, rest...)
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// MaxSearchResults bounds the answer of /search.json.
const MaxSearchResults = 100

// serveSearch answers the search-as-you-type script: the first matches as
// JSON, which the script puts on the page as text.
func (h *Handler) serveSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	if len(q) > MaxQueryBytes {
		http.Error(w, fmt.Sprintf("search query too long: %d bytes, at most %d", len(q), MaxQueryBytes), http.StatusBadRequest)
		return
	}
	limit := h.opts.PageSize
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxSearchResults {
			http.Error(w, fmt.Sprintf("limit %q: want 1 to %d", s, MaxSearchResults), http.StatusBadRequest)
			return
		}
		limit = n
	}
	snap := h.src.Snapshot()
	type hit struct {
		Name        string `json:"name"`
		Path        string `json:"path"`
		Prefix      string `json:"prefix"`
		Description string `json:"description"`
		Files       int    `json:"files"`
		Size        string `json:"size"`
	}
	hits := []hit{}
	for _, sk := range h.search(r, snap, q, limit) {
		rw := rowOf(sk)
		hits = append(hits, hit{rw.Name, rw.Path, rw.Prefix, rw.Description, rw.Files, humanSize(rw.Size)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		Query string `json:"query"`
		Hits  []hit  `json:"hits"`
	}{q, hits})
}
