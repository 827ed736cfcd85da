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

// TestVersionStates: a skill page of a source keeping versions lists
// each with its state, newest first, escapes what people wrote (a
// rejection's reason), says so above everything when the version served
// is pending review, and is asked only for skills the caller may see.
func TestVersionStates(t *testing.T) {
	cat := openCatalog(t, fstest.MapFS{
		"acme/notes/SKILL.md":  skillMD("notes", "Notes with versions.", "# Notes\n"),
		"acme/hidden/SKILL.md": skillMD("hidden", "A skill nobody may see.", "# Hidden\n"),
	})
	at := time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)
	var asked []string
	versions := func(_ context.Context, path string) ([]web.VersionState, error) {
		asked = append(asked, path)
		return []web.VersionState{
			{Version: 1, State: "yanked", PublishedBy: "alice", PublishedAt: at},
			{Version: 2, State: "rejected", PublishedBy: "alice", PublishedAt: at, ReviewedBy: "bob", Reason: "<script>alert(1)</script>"},
			{Version: 3, State: "approved", PublishedBy: "alice", PublishedAt: at, ReviewedBy: "bob"},
			{Version: 4, State: "pending", Current: true, PublishedBy: "alice", PublishedAt: at},
		}, nil
	}
	ts := serveWeb(t, published.NewCatalogSource(cat), &web.Options{Versions: versions,
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
	if resp.StatusCode != http.StatusNotFound || strings.Join(asked, " ") != "acme/notes" {
		t.Errorf("a hidden skill's page: %d, versions asked for %v", resp.StatusCode, asked)
	}

	// A failing source of versions: the page says so and still renders.
	ts = serveWeb(t, published.NewCatalogSource(cat), &web.Options{Versions: func(context.Context, string) ([]web.VersionState, error) {
		return nil, errors.New("database down")
	}})
	if _, page := get(t, ts.URL+"/s/acme/notes/"); !strings.Contains(page, "The versions could not be read") || !strings.Contains(page, "<h1>notes</h1>") || strings.Contains(page, "database down") {
		t.Errorf("page with versions unreadable:\n%s", page)
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
	versions := func(context.Context, string) ([]web.VersionState, error) {
		return []web.VersionState{
			{Version: 1, State: "rejected", PublishedBy: evil, PublishedAt: time.Now(), ReviewedBy: evil, Reason: evil},
			{Version: 2, State: "pending", Current: true, PublishedBy: "alice", PublishedAt: time.Now()},
		}, nil
	}
	ts := serveWeb(t, published.NewCatalogSource(cat), &web.Options{Versions: versions})
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
