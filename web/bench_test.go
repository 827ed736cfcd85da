package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sort"
	"testing"
	"testing/fstest"
	"time"

	"github.com/skillport/skillport/gateway"
	"github.com/skillport/skillport/server"
	"github.com/skillport/skillport/web"
)

var words = []string{"pdf", "invoice", "review", "deploy", "chart", "sql", "audit", "release", "translate", "schema",
	"image", "email", "budget", "lint", "test", "docs", "backup", "metrics", "incident", "refund"}

func bigCatalog(b *testing.B, n int) *server.CatalogSource {
	src := server.NewCatalogSource(openCatalog(b, bigFS(n)))
	if got := len(src.Snapshot().Skills()); got != n {
		b.Fatalf("catalog has %d skills, want %d", got, n)
	}
	return src
}

func bigFS(n int) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i := range n {
		name := fmt.Sprintf("%s-%s-%d", words[i%len(words)], words[(i/7)%len(words)], i)
		desc := fmt.Sprintf("Use when working with %s and %s, step-by-step %s for team %d.", words[i%len(words)],
			words[(i/3)%len(words)], words[(i/11)%len(words)], i%97)
		fsys[fmt.Sprintf("org%d/%s/SKILL.md", i%10, name)] = skillMD(name, desc, "# "+name+"\n")
	}
	return fsys
}

// firstByte is the time to the first byte of a GET and the bytes received.
func firstByte(b *testing.B, url string) (time.Duration, int64) {
	var start time.Time
	var first time.Duration
	req, _ := http.NewRequest("GET", url, nil)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotFirstResponseByte: func() { first = time.Since(start) },
	}))
	start = time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("%s: %s", url, resp.Status)
	}
	return first, n
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// BenchmarkCatalogPage10k: the catalog page of 10,000 skills, first byte
// (p50, target ≤ 50 ms) and bytes (target ≤ 1 MB), against /healthz of the
// same server in the same run; and the discovery document, which lists
// every skill.
func BenchmarkCatalogPage10k(b *testing.B) {
	src := bigCatalog(b, 10000)
	ts := serveWeb(b, src, nil)
	var page, base, search, wk []time.Duration
	var size, searchSize, wkSize int64
	for b.Loop() {
		d, n := firstByte(b, ts.URL+web.WellKnownPath)
		wk, wkSize = append(wk, d), n
		d, n = firstByte(b, ts.URL+"/")
		page, size = append(page, d), n
		d, n = firstByte(b, ts.URL+"/?q=invoice+audit")
		search, searchSize = append(search, d), n
		d, _ = firstByte(b, ts.URL+"/healthz")
		base = append(base, d)
	}
	b.ReportMetric(float64(median(page).Microseconds())/1000, "page-first-byte-ms")
	b.ReportMetric(float64(size)/1000, "page-kB")
	b.ReportMetric(float64(median(search).Microseconds())/1000, "search-page-first-byte-ms")
	b.ReportMetric(float64(searchSize)/1000, "search-page-kB")
	b.ReportMetric(float64(median(page))/float64(median(base)), "page/healthz")
	b.ReportMetric(float64(median(wk).Microseconds())/1000, "wellknown-first-byte-ms")
	b.ReportMetric(float64(wkSize)/1000, "wellknown-kB")
}

// BenchmarkSearch10k: the web catalog's search over 10,000 skills against
// the BM25 index behind the gateway's search_skills over the same skills,
// measured in the same run (ratio below 1 means the web search is faster).
func BenchmarkSearch10k(b *testing.B) {
	src := bigCatalog(b, 10000)
	h, err := web.New(src, nil)
	if err != nil {
		b.Fatal(err)
	}
	var docs []gateway.Doc
	for _, sk := range src.Snapshot().Skills() {
		docs = append(docs, gateway.Doc{Name: sk.Path, Description: sk.Frontmatter.Description()})
	}
	ix := gateway.BuildIndex(docs)
	req := httptest.NewRequest("GET", "/", nil)
	queries := []string{"invoice", "audit release", "deploy sql team", "translate", "nothing-matches"}
	h.Search(req, "warm", 10) // build the search text once, as the first request does
	var web, bm25 time.Duration
	for b.Loop() {
		for _, q := range queries {
			t0 := time.Now()
			h.Search(req, q, 10)
			t1 := time.Now()
			ix.Search(q, 10)
			web += t1.Sub(t0)
			bm25 += time.Since(t1)
		}
	}
	n := float64(b.N * len(queries))
	b.ReportMetric(float64(web.Nanoseconds())/n/1000, "web-us/search")
	b.ReportMetric(float64(bm25.Nanoseconds())/n/1000, "bm25-us/search")
	b.ReportMetric(float64(web)/float64(bm25), "web/bm25")
}
