package gateway

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Field weights and BM25 parameters. A skill's name is short and chosen to
// be found, so a match there outweighs one in a long description; the body
// is long and full of incidental words, so it counts least.
const (
	bm25K1 = 1.2
	bm25B  = 0.75

	weightName = 4.0
	weightDesc = 1.0
	weightBody = 0.5

	numFields = 3

	// maxTF caps the count of one term in one field: repeating a keyword
	// in a description must not buy rank (keyword stuffing), and past a
	// few occurrences BM25 would barely reward it anyway.
	maxTF = 3
)

// maxTokenLen bounds one token: longer runs of letters are not words anyone
// searches for, and a hostile description must not bloat the index.
const maxTokenLen = 64

// Doc is one searchable skill: the texts of its fields.
type Doc struct {
	// Name is matched with the highest weight: the qualified name and the
	// skill path, e.g. "docs__pdf-processing acme/billing/refunds".
	Name string
	// Description is the frontmatter description.
	Description string
	// Body is the SKILL.md body, or "" when it is not indexed.
	Body string
}

// Index is a BM25F index over skill names, descriptions and bodies. It is
// immutable once built and safe for concurrent searches.
type Index struct {
	n        int
	postings map[string][]posting
	pool     sync.Pool // *accumulator
}

// posting is a term's occurrence in one document with its BM25F weight
// there, tf/(k1+tf) of the field-weighted, length-normalised term
// frequency: it depends on the document alone, so it is computed once at
// build time and a search only multiplies it by the term's idf.
type posting struct {
	doc int32
	w   float32
}

// Hit is one search result: the position of the document given to
// [BuildIndex] and its score.
type Hit struct {
	Doc   int
	Score float64
}

// BuildIndex indexes docs; hits refer to them by position.
func BuildIndex(docs []Doc) *Index {
	ix := &Index{n: len(docs), postings: map[string][]posting{}}
	type occurrence struct {
		doc int32
		tf  [numFields]uint16
	}
	docLen := make([][numFields]uint32, len(docs))
	occurrences := map[string][]occurrence{}
	var total [numFields]float64
	counts := map[string]*[numFields]uint16{}
	for i, d := range docs {
		clear(counts)
		for f, text := range [numFields]string{d.Name, d.Description, d.Body} {
			n := 0
			tokenize(text, f == 0, func(tok string) {
				n++
				c := counts[tok]
				if c == nil {
					c = new([numFields]uint16)
					counts[tok] = c
				}
				if c[f] < math.MaxUint16 {
					c[f]++
				}
			})
			docLen[i][f] = uint32(n)
			total[f] += float64(n)
		}
		for tok, c := range counts {
			occurrences[tok] = append(occurrences[tok], occurrence{doc: int32(i), tf: *c})
		}
	}
	var avgLen [numFields]float64
	for f := range total {
		if ix.n > 0 {
			avgLen[f] = total[f] / float64(ix.n)
		}
	}
	weights := [numFields]float64{weightName, weightDesc, weightBody}
	for tok, occ := range occurrences {
		ps := make([]posting, len(occ))
		for i, o := range occ {
			var tf float64
			for f := range numFields {
				if o.tf[f] == 0 {
					continue
				}
				norm := 1.0
				if avgLen[f] > 0 {
					norm = 1 - bm25B + bm25B*float64(docLen[o.doc][f])/avgLen[f]
				}
				tf += weights[f] * float64(min(o.tf[f], maxTF)) / norm
			}
			ps[i] = posting{doc: o.doc, w: float32(tf / (bm25K1 + tf))}
		}
		ix.postings[tok] = ps
	}
	return ix
}

// Len returns the number of indexed documents.
func (ix *Index) Len() int { return ix.n }

// Search returns up to limit documents matching any term of query, best
// first; ties keep document order, so results are stable.
func (ix *Index) Search(query string, limit int) []Hit {
	if ix.n == 0 || limit <= 0 {
		return nil
	}
	// Scores accumulate in a dense array, reused across searches: a common
	// term touches thousands of documents, and a map there costs more than
	// the scoring itself.
	acc, _ := ix.pool.Get().(*accumulator)
	if acc == nil {
		acc = &accumulator{scores: make([]float64, ix.n)}
	}
	defer func() {
		for _, d := range acc.touched {
			acc.scores[d] = 0
		}
		acc.touched = acc.touched[:0]
		ix.pool.Put(acc)
	}()
	var seen []string
	tokenize(query, true, func(tok string) {
		if slices.Contains(seen, tok) {
			return
		}
		seen = append(seen, tok)
		ps := ix.postings[tok]
		if len(ps) == 0 {
			return
		}
		df := float64(len(ps))
		idf := math.Log(1 + (float64(ix.n)-df+0.5)/(df+0.5))
		for _, p := range ps {
			if acc.scores[p.doc] == 0 {
				acc.touched = append(acc.touched, p.doc)
			}
			acc.scores[p.doc] += idf * float64(p.w)
		}
	})
	// Keep the best limit hits in a min-heap ordered worst first.
	worse := func(a, b Hit) bool { return a.Score < b.Score || a.Score == b.Score && a.Doc > b.Doc }
	heap := make([]Hit, 0, min(limit, len(acc.touched)))
	down := func(i int) {
		for {
			l, small := 2*i+1, i
			if l < len(heap) && worse(heap[l], heap[small]) {
				small = l
			}
			if r := l + 1; r < len(heap) && worse(heap[r], heap[small]) {
				small = r
			}
			if small == i {
				return
			}
			heap[i], heap[small] = heap[small], heap[i]
			i = small
		}
	}
	for _, d := range acc.touched {
		h := Hit{Doc: int(d), Score: acc.scores[d]}
		if len(heap) < limit {
			heap = append(heap, h)
			for i := len(heap) - 1; i > 0; {
				parent := (i - 1) / 2
				if !worse(heap[i], heap[parent]) {
					break
				}
				heap[i], heap[parent] = heap[parent], heap[i]
				i = parent
			}
		} else if worse(heap[0], h) {
			heap[0] = h
			down(0)
		}
	}
	sort.Slice(heap, func(i, j int) bool { return worse(heap[j], heap[i]) })
	return heap
}

// accumulator is the per-search scratch space of an Index.
type accumulator struct {
	scores  []float64
	touched []int32
}

// tokenize calls emit for each search term of s: runs of letters and digits,
// lowercased and lightly stemmed. With compounds set (names and queries), a
// hyphenated or slash-separated word such as "pdf-processing" is also
// emitted whole, so that an exact name outranks a scattered match while
// "pdf" alone still finds it.
func tokenize(s string, compounds bool, emit func(string)) {
	var word, compound strings.Builder
	parts := 0
	joined := false
	flushWord := func() {
		if word.Len() > 0 {
			if word.Len() <= maxTokenLen {
				emit(stem(word.String()))
			}
			word.Reset()
			parts++
		}
	}
	flushCompound := func() {
		if compounds && parts > 1 && compound.Len() <= maxTokenLen {
			emit(compound.String())
		}
		compound.Reset()
		parts, joined = 0, false
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if joined && word.Len() == 0 {
				// All spellings of a joined name ("pdf-processing",
				// "pdf_processing", "billing/refunds") meet at one '-'.
				compound.WriteByte('-')
			}
			joined = false
			r = unicode.ToLower(r)
			word.WriteRune(r)
			compound.WriteRune(r)
		case r == '-' || r == '_' || r == '/' || r == '.':
			if word.Len() > 0 {
				flushWord()
				joined = true
			}
		default:
			flushWord()
			flushCompound()
		}
	}
	flushWord()
	flushCompound()
}

// stem strips the commonest English inflections so that "forms" finds
// "form" and "processing" finds "process". It is deliberately light: a
// wrong merge costs more than a missed one in a list of names.
func stem(w string) string {
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		return w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes")):
		return w[:len(w)-2]
	case len(w) > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		return w[:len(w)-1]
	}
	return w
}
