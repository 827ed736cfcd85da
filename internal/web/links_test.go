package web_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/web"
)

// TestLinksEscaped: every link of the catalog and skill pages leads to a
// page that answers 200, also for folder names with spaces, "%" and
// non-ASCII letters (published percent-encoded), and the skill page's
// redirect keeps the escapes.
func TestLinksEscaped(t *testing.T) {
	fsys := fstest.MapFS{
		"acme/my tools/pdf/SKILL.md":          skillMD("pdf", "Fills PDF forms.", "Body\n"),
		"acme/my tools/pdf/ref/notes café.md": {Data: []byte("notes\n")},
		"acme/100%/zip/SKILL.md":              skillMD("zip", "Packs zip files.", "Body\n"),
		"acme/日本/kana/SKILL.md":               skillMD("kana", "Writes kana.", "Body\n"),
		"acme/日本/kana/a b.txt":                {Data: []byte("ab\n")},
	}
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, fsys)), &web.Options{Logger: discard()})
	href := regexp.MustCompile(`href="(/(?:s|raw|archive)/[^"]*)"`)
	seen := map[string]bool{}
	pages := []string{"/"}
	for len(pages) > 0 {
		p := pages[0]
		pages = pages[1:]
		resp, body := get(t, ts.URL+p)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %s", p, resp.Status)
			continue
		}
		for _, m := range href.FindAllStringSubmatch(body, -1) {
			u := strings.ReplaceAll(m[1], "&amp;", "&")
			if !seen[u] {
				seen[u] = true
				pages = append(pages, u)
			}
		}
	}
	if len(seen) < 9 {
		t.Errorf("followed %d links, want the 3 skills' pages and their files: %v", len(seen), seen)
	}
	// /s/PATH without the slash redirects to the page, escapes kept.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(ts.URL + "/s/acme/my%20tools/pdf")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || loc != "/s/acme/my%20tools/pdf/" {
		t.Errorf("redirect: %s to %q", resp.Status, loc)
	}
}

// TestWellKnownNamesUnique: two skills of one name (in different
// folders) would give the discovery document two entries of that name; a
// host installs by name, so only the first (by path) is listed.
func TestWellKnownNamesUnique(t *testing.T) {
	fsys := fstest.MapFS{
		"a/pdf/SKILL.md": skillMD("pdf", "The first pdf skill.", "Body\n"),
		"b/pdf/SKILL.md": skillMD("pdf", "The second pdf skill.", "Body\n"),
		"b/zip/SKILL.md": skillMD("zip", "Packs zip files.", "Body\n"),
	}
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, fsys)), &web.Options{Logger: discard()})
	_, body := get(t, ts.URL+web.WellKnownPath)
	var doc struct {
		Skills []struct{ Name, URL string }
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, s := range doc.Skills {
		names[s.Name]++
	}
	if names["pdf"] != 1 || names["zip"] != 1 || !strings.Contains(body, "/raw/a/pdf/SKILL.md") {
		t.Errorf("discovery document: %s", body)
	}
}
