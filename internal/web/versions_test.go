package web_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/web"
)

// reviews is a registry whose skills' versions have review states,
// newest first; every SkillInfo asked is recorded.
type reviews struct {
	states []web.VersionState
	err    error
	asked  []string
}

func (r *reviews) SkillInfo(_ context.Context, path string) (*web.SkillInfo, error) {
	r.asked = append(r.asked, path)
	if r.err != nil {
		return nil, r.err
	}
	return &web.SkillInfo{Reviews: r.states, LoadDays: 7}, nil
}

func (r *reviews) RecentLoads(context.Context, []string) (map[string]int64, error) {
	return nil, nil
}

// TestVersionStates: a registry's skill page lists each version with its
// state, newest first, escapes what people wrote (a rejection's reason),
// says so above everything when the version served is pending review,
// and asks the registry once, only for skills the caller may see.
func TestVersionStates(t *testing.T) {
	cat := openCatalog(t, fstest.MapFS{
		"acme/notes/SKILL.md":  skillMD("notes", "Notes with versions.", "# Notes\n"),
		"acme/hidden/SKILL.md": skillMD("hidden", "A skill nobody may see.", "# Hidden\n"),
	})
	at := time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)
	reg := &reviews{states: []web.VersionState{
		{Version: 4, State: "pending", Current: true, PublishedBy: "alice", PublishedAt: at},
		{Version: 3, State: "approved", PublishedBy: "alice", PublishedAt: at, ReviewedBy: "bob"},
		{Version: 2, State: "rejected", PublishedBy: "alice", PublishedAt: at, ReviewedBy: "bob", Reason: "<script>alert(1)</script>"},
		{Version: 1, State: "yanked", PublishedBy: "alice", PublishedAt: at},
	}}
	ts := serveWeb(t, published.NewCatalogSource(cat), &web.Options{Registry: reg,
		Visible: func(_ *http.Request, sk *catalog.Skill) bool { return sk.Path != "acme/hidden" }})
	_, page := get(t, ts.URL+"/s/acme/notes/")
	for _, want := range []string{
		`<p class="pending" role="status">This version is served before review`,
		`<tr class="state-pending"><td class="num">4 <strong>served</strong>`,
		`<tr class="state-rejected"><td class="num">2</td><td><span class="state">rejected</span><br><span class="muted">&lt;script&gt;alert(1)&lt;/script&gt;</span>`,
		`<tr class="state-yanked">`, `<tr class="state-approved">`, `2026-11-28 01:02`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the skill page lacks %s", want)
		}
	}
	if i, j := strings.Index(page, "state-pending"), strings.Index(page, "state-yanked"); i < 0 || j < i {
		t.Errorf("versions are not listed newest first")
	}
	resp, err := http.Get(ts.URL + "/s/acme/hidden/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || strings.Join(reg.asked, " ") != "acme/notes" {
		t.Errorf("a hidden skill's page: %d, the registry asked for %v", resp.StatusCode, reg.asked)
	}

	// A failing registry: the page says so and still renders.
	ts = serveWeb(t, published.NewCatalogSource(cat), &web.Options{Registry: &reviews{err: errors.New("database down")}})
	if _, page := get(t, ts.URL+"/s/acme/notes/"); !strings.Contains(page, "The registry could not be read; versions and findings are not shown") || !strings.Contains(page, "<h1>notes</h1>") || strings.Contains(page, "database down") {
		t.Errorf("page with versions unreadable:\n%s", page)
	}
	// Older versions past MaxVersionsShown are counted, not listed.
	many := &reviews{}
	for v := web.MaxVersionsShown + 3; v > 0; v-- {
		many.states = append(many.states, web.VersionState{Version: v, State: "approved", Current: v == web.MaxVersionsShown+3})
	}
	ts = serveWeb(t, published.NewCatalogSource(cat), &web.Options{Registry: many})
	if _, page := get(t, ts.URL+"/s/acme/notes/"); strings.Count(page, `<tr class="state-approved">`) != web.MaxVersionsShown || !strings.Contains(page, "3 older versions not shown") || strings.Contains(page, `<td class="num">3</td>`) {
		t.Errorf("a skill of %d versions:\n%s", web.MaxVersionsShown+3, page)
	}
	// A source without versions: no section.
	ts = serveWeb(t, published.NewCatalogSource(cat), nil)
	if _, page := get(t, ts.URL+"/s/acme/notes/"); strings.Contains(page, "Versions") {
		t.Errorf("a source without versions shows a versions section")
	}
}

// TestBrowserVersions: in a real Chromium, a skill page's versions and
// the pending banner render under the page's CSP (styles from the
// stylesheet, no inline ones), and hostile text in a reason or a name
// runs nothing.
func TestBrowserVersions(t *testing.T) {
	cat := openCatalog(t, fstest.MapFS{"acme/notes/SKILL.md": skillMD("notes", "Notes with versions.", "# Notes\n")})
	evil := `<img src=x onerror=alert(1)><script>alert(2)</script>`
	reg := &reviews{states: []web.VersionState{
		{Version: 2, State: "pending", Current: true, PublishedBy: "alice", PublishedAt: time.Now()},
		{Version: 1, State: "rejected", PublishedBy: evil, PublishedAt: time.Now(), ReviewedBy: evil, Reason: evil},
	}}
	ts := serveWeb(t, published.NewCatalogSource(cat), &web.Options{Registry: reg})
	ctx := chromium(t)
	w := watchPage(t, ctx, ts.URL)
	var banner, rejectedColor string
	var rows int
	err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/s/acme/notes/"),
		chromedp.WaitVisible(chromedp.CSS(`table.versions`)),
		into(chromedp.Text(chromedp.CSS(`p.pending`)), &banner),
		into(chromedp.Evaluate[int](`document.querySelectorAll('table.versions tbody tr').length`), &rows),
		into(chromedp.Evaluate[string](`getComputedStyle(document.querySelector('.state-rejected .state')).color`), &rejectedColor),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range w.take() {
		t.Errorf("the versions page: %s", p)
	}
	if !strings.Contains(banner, "served before review") || rows != 2 || rejectedColor != "rgb(180, 35, 24)" {
		t.Errorf("banner %q, %d rows, rejected state colour %q (the stylesheet's rgb(180, 35, 24))", banner, rows, rejectedColor)
	}
}
