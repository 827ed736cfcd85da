package web

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
)

// searchCache holds the token index of the snapshots seen lately, built
// once per snapshot (the first search after a reload pays for it). Callers
// who see different parts of a catalog search different views, so it
// keeps one index per view id, at most maxCachedViews of them.
type searchCache struct {
	mu  sync.Mutex
	idx map[string]*tokenIndex
}

// maxCachedViews bounds the snapshots (one per distinct view of the
// current catalog) each cache of the handler keeps; past it the cache
// starts over, so many distinct callers cost rebuilding, not memory.
const maxCachedViews = 16

func (c *searchCache) get(snap published.Snapshot) *tokenIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := snap.ID()
	if idx := c.idx[id]; idx != nil {
		return idx
	}
	if c.idx == nil || len(c.idx) >= maxCachedViews {
		c.idx = map[string]*tokenIndex{}
	}
	idx := buildTokenIndex(snap.Skills())
	c.idx[id] = idx
	return idx
}

// tokenIndex maps every lowercase word of a skill's path and description to
// the skills that contain it, so that a query word matches by prefix (as
// the user types) with a binary search instead of a scan of every skill.
type tokenIndex struct {
	n        int
	tokens   []string  // sorted, unique
	postings [][]int32 // skill indexes, ascending, per token
}

// tokenize calls emit with each run of letters and digits of s, lowercased.
func tokenize(s string, emit func(string)) {
	start := -1
	for i, r := range s + " " {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			emit(strings.ToLower(s[start:i]))
			start = -1
		}
	}
}

func buildTokenIndex(skills []*catalog.Skill) *tokenIndex {
	m := map[string][]int32{}
	for i, sk := range skills {
		add := func(tok string) {
			p := m[tok]
			if len(p) == 0 || p[len(p)-1] != int32(i) {
				m[tok] = append(p, int32(i))
			}
		}
		tokenize(sk.Path, add)
		tokenize(sk.Frontmatter.Description(), add)
	}
	ix := &tokenIndex{n: len(skills), tokens: make([]string, 0, len(m))}
	for tok := range m {
		ix.tokens = append(ix.tokens, tok)
	}
	slices.Sort(ix.tokens)
	ix.postings = make([][]int32, len(ix.tokens))
	for i, tok := range ix.tokens {
		ix.postings[i] = m[tok]
	}
	return ix
}

// match returns the set of skills having, for every query word, a token
// that starts with it.
func (ix *tokenIndex) match(words []string) []uint64 {
	var acc []uint64
	for _, w := range words {
		set := make([]uint64, (ix.n+63)/64)
		lo, _ := slices.BinarySearch(ix.tokens, w)
		for i := lo; i < len(ix.tokens) && strings.HasPrefix(ix.tokens[i], w); i++ {
			for _, d := range ix.postings[i] {
				set[d/64] |= 1 << (d % 64)
			}
		}
		if acc == nil {
			acc = set
			continue
		}
		for i := range acc {
			acc[i] &= set[i]
		}
	}
	return acc
}

// search returns the visible skills that have, for each word of q, a word
// of their path or description starting with it (case-insensitive); those
// whose name contains the first word come first, catalog order otherwise.
// limit < 0 means all.
func (h *Handler) search(r *http.Request, snap published.Snapshot, q string, limit int) []*catalog.Skill {
	skills := snap.Skills()
	var words []string
	tokenize(q, func(w string) { words = append(words, w) })
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
	set := h.idx.get(snap).match(words)
	for wi, word := range set {
		for word != 0 {
			i := wi*64 + bits.TrailingZeros64(word)
			word &= word - 1
			sk := skills[i]
			if !h.opts.Visible(r, sk) {
				continue
			}
			if strings.Contains(sk.Name, words[0]) {
				first = append(first, sk)
			} else {
				rest = append(rest, sk)
			}
			if limit >= 0 && len(first) >= limit {
				return first
			}
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
	snap := h.snapshot(r)
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
