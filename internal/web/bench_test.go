package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/web"
)

var words = []string{"pdf", "invoice", "review", "deploy", "chart", "sql", "audit", "release", "translate", "schema",
	"image", "email", "budget", "lint", "test", "docs", "backup", "metrics", "incident", "refund"}

func bigCatalog(b *testing.B, n int) *published.CatalogSource {
	src := published.NewCatalogSource(openCatalog(b, bigFS(n)))
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

// BenchmarkWellKnownArchives10k: the discovery document of 10,000 skills
// with files besides SKILL.md, each an archive entry. Its first request
// after a snapshot change packs every skill to publish the archive's
// digest (cold); later requests answer from the entries cached for the
// snapshot (warm), against which the cold cost is reported.
func BenchmarkWellKnownArchives10k(b *testing.B) {
	fsys := bigFS(10000)
	var mds []string
	for p := range fsys {
		mds = append(mds, p)
	}
	for _, p := range mds {
		dir := strings.TrimSuffix(p, "/SKILL.md")
		fsys[dir+"/scripts/run.sh"] = &fstest.MapFile{Data: []byte(strings.Repeat("echo run\n", 20))}
		fsys[dir+"/references/notes.md"] = &fstest.MapFile{Data: []byte(strings.Repeat("Some notes. ", 80))}
	}
	// On disk: fstest.MapFS lists a directory by scanning every file, too
	// slow for a tree of 30,000.
	dir := b.TempDir()
	for p, f := range fsys {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), f.Data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard()})
	if err != nil {
		b.Fatal(err)
	}
	src := published.NewCatalogSource(cat)
	serve := func(h *web.Handler) (time.Duration, int) {
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, httptest.NewRequest("GET", web.WellKnownPath, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"type":"archive"`) {
			b.Fatalf("%d %.200s", rec.Code, rec.Body.String())
		}
		return time.Since(start), rec.Body.Len()
	}
	var cold, warm []time.Duration
	var size int
	for b.Loop() {
		h, err := web.New(src, &web.Options{Logger: discard()})
		if err != nil {
			b.Fatal(err)
		}
		d, _ := serve(h)
		cold = append(cold, d)
		d, size = serve(h)
		warm = append(warm, d)
	}
	b.ReportMetric(float64(median(cold).Microseconds())/1000, "cold-ms")
	b.ReportMetric(float64(median(warm).Microseconds())/1000, "warm-ms")
	b.ReportMetric(float64(median(cold))/float64(median(warm)), "cold/warm")
	b.ReportMetric(float64(size)/1000, "kB")
}
