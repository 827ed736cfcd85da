package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/scan"
	"github.com/skillport/skillport/internal/web"
)

// fixedRegistry is what a registry knows of the sample skills, fixed: a
// registry's own queries are tested against PostgreSQL in package
// registry (TestCLIScan); here the pages are.
type fixedRegistry struct{}

// hostile is a finding an external scanner made up: its text must reach
// the page as text.
const hostile = `<img src=x onerror=alert(1)><script>alert(2)</script>`

func (fixedRegistry) SkillInfo(_ context.Context, path string) (*web.SkillInfo, error) {
	if path != "pdf" {
		return nil, nil
	}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	return &web.SkillInfo{Loads: 42, Callers: 3, LoadDays: 7, Versions: []web.VersionInfo{
		{Version: 3, State: "current", PublishedBy: "alice", PublishedAt: at, Scanned: true, Findings: []scan.Finding{
			{Scanner: "skillport", RuleID: "download-exec", Level: "error", File: "scripts/run.sh", Line: 2, Message: "pipes a download into a shell"},
			{Scanner: "ext", RuleID: hostile, Level: "warning", File: hostile, Message: hostile},
		}},
		{Version: 2, State: "yanked", PublishedBy: "bob", PublishedAt: at, Scanned: true},
		{Version: 1, PublishedBy: "bob", PublishedAt: at},
	}}, nil
}

func (fixedRegistry) RecentLoads(_ context.Context, paths []string) (map[string]int64, error) {
	return map[string]int64{"pdf": 42}, nil
}

// A registry's skill page shows versions, their state and findings, and
// recent loads, in a real browser, with a scanner's hostile text inert;
// the catalog page shows each skill's recent loads.
func TestBrowserRegistryPages(t *testing.T) {
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, sampleFS())), &web.Options{Registry: fixedRegistry{}})
	ctx := chromium(t)
	w := watchPage(t, ctx, ts.URL)
	var versions, loads, catalog string
	var findings int
	err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/s/pdf/"),
		chromedp.WaitVisible(chromedp.CSS(`#versions`)),
		into(chromedp.Text(chromedp.CSS(`#versions`)), &versions),
		into(chromedp.Text(chromedp.CSS(`#loads`)), &loads),
		into(chromedp.Evaluate[int](`document.querySelectorAll('#versions li.finding').length`), &findings),
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#results li`)),
		into(chromedp.Text(chromedp.CSS(`#results`)), &catalog),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"v3", "current", "v2", "yanked", "not scanned", "none", "skillport/download-exec", "scripts/run.sh:2", hostile} {
		if !strings.Contains(versions, want) {
			t.Errorf("the versions table lacks %q:\n%s", want, versions)
		}
	}
	if findings != 2 || loads != "42 loads by 3 callers in the last 7 days" {
		t.Errorf("%d findings shown, loads %q", findings, loads)
	}
	if !strings.Contains(catalog, "42 recent loads") || !strings.Contains(catalog, "0 recent loads") {
		t.Errorf("the catalog page's loads:\n%s", catalog)
	}
	if p := w.take(); len(p) > 0 {
		t.Errorf("the pages did what they should not: %q", p)
	}
	// Without a registry, nothing of it shows.
	plain := serveWeb(t, published.NewCatalogSource(openCatalog(t, sampleFS())), nil)
	_, body := get(t, plain.URL+"/s/pdf/")
	mustNotContain(t, "a directory's skill page", body, `id="versions"`, `id="loads"`)
	_, body = get(t, plain.URL+"/")
	mustNotContain(t, "a directory's catalog page", body, "recent load")
}
