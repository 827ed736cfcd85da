package web_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/chromedp/chromedp"

	"github.com/skillport/skillport/internal/published"
)

// xssFS is a catalog of hostile skills: every way we know for a skill's
// bytes to become script in a page that shows them.
func xssFS() fstest.MapFS {
	const payloads = "<script>alert('script')</script>\n\n" +
		"<img src=x onerror=\"alert('img')\">\n\n" +
		"<svg onload=\"alert('svg')\"><script>alert('svg-script')</script></svg>\n\n" +
		"<iframe src=\"javascript:alert('iframe')\"></iframe>\n\n" +
		"<a href=\"javascript:alert('a')\">html link</a>\n\n" +
		"[md link](javascript:alert('md'))\n\n" +
		"[case link](JaVaScRiPt:alert('case'))\n\n" +
		"[entity link](jav&#x09;ascript:alert('entity'))\n\n" +
		"[encoded link](javascript%3Aalert('enc'))\n\n" +
		"<javascript:alert('autolink')>\n\n" +
		"[data link](data:text/html,<script>alert('data')</script>)\n\n" +
		"[vbs](vbscript:msgbox('vbs'))\n\n" +
		"![remote image](https://evil.example/track.png)\n\n" +
		"![proto-relative](//evil.example/track.png)\n\n" +
		"![js image](javascript:alert('img2'))\n\n" +
		"[ref link][r]\n\n[r]: javascript:alert('ref')\n\n" +
		"<details open ontoggle=\"alert('details')\"><summary>x</summary></details>\n\n" +
		"<style>body{background:url(https://evil.example/css)}</style>\n\n" +
		"<form action=\"https://evil.example/\"><button>go</button></form>\n\n" +
		"<base href=\"https://evil.example/\">\n\n" +
		"<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert('meta')\">\n\n" +
		"<object data=\"javascript:alert('object')\"></object>\n\n" +
		"<math><mtext><table><mglyph><style><img src=x onerror=alert('mxss')></style></mglyph></table></mtext></math>\n\n" +
		"<noscript><p title=\"</noscript><img src=x onerror=alert('noscript')>\"></noscript>\n\n" +
		"```js\" onmouseover=\"alert('lang')\n" + "code\n```\n\n" +
		"| a | b |\n|---|---|\n| <img src=x onerror=alert('cell')> | [x](javascript:alert('cell')) |\n"
	return fstest.MapFS{
		"evil/SKILL.md": {Data: []byte("---\nname: evil\n" +
			"description: \"<script>alert('fm')</script><img src=x onerror=alert('fm-img')> javascript:alert(1)\"\n" +
			"metadata:\n  note: \"</td><script>alert('fm-meta')</script>\"\n  \"<b onmouseover=alert('key')>k</b>\": v\n---\n" + payloads)},
		"evil/<img src=x onerror=alert('file')>.md": {Data: []byte("<script>alert('file-body')</script>\n")},
		"evil/page.html": {Data: []byte("<html><body><script>alert('raw-html')</script></body></html>\n")},
		"evil/\"><svg onload=alert('fname2')>.txt":         {Data: []byte("x\n")},
		"evil/references/<script>alert('dir')</script>.md": {Data: []byte("y\n")},
	}
}

// TestBrowserXSS opens every page of the hostile catalog in Chromium, and
// moves the mouse over and clicks every link, and fails on any dialog,
// console message, exception, log entry (a CSP violation included) or
// request to another origin.
func TestBrowserXSS(t *testing.T) {
	src := published.NewCatalogSource(openCatalog(t, xssFS()))
	sk := src.Snapshot().Skill("skill://evil/SKILL.md")
	if sk == nil {
		t.Fatal("the hostile skill was not published")
	}
	if len(sk.Files) != len(xssFS()) {
		var names []string
		for _, f := range sk.Files {
			names = append(names, f.Path)
		}
		t.Fatalf("published %d of %d hostile files: %q", len(sk.Files), len(xssFS()), names)
	}
	ts := serveWeb(t, src, nil)
	ctx := chromium(t)
	w := watchPage(t, ctx, ts.URL)
	pages := []string{"/", "/?q=%3Cscript%3Ealert(1)%3C/script%3E", "/s/evil/", "/search.json?q=evil"}
	for _, f := range sk.Files {
		rel := strings.TrimPrefix(f.URI, sk.Root+"/")
		pages = append(pages, "/s/evil/"+rel) // catalog URIs are escaped already
	}
	hover := `document.querySelectorAll('a, img, svg, details, [onmouseover]').forEach(e => {
		e.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
	}); true`
	for _, p := range pages {
		var hrefs []string
		err := chromedp.Do(ctx,
			chromedp.Navigate(ts.URL+p),
			chromedp.WaitReady(chromedp.CSS(`body`)),
			into(chromedp.Evaluate[bool](hover), new(bool)),
			into(chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('a[href]'), a => a.href)`), &hrefs),
		)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, h := range hrefs {
			if low := strings.ToLower(h); !strings.HasPrefix(low, ts.URL) && !strings.HasPrefix(low, "https://") && !strings.HasPrefix(low, "http://") && !strings.HasPrefix(low, "mailto:") {
				t.Errorf("%s: link %q", p, h)
			}
		}
		// Follow every same-origin link, downloads included: the raw
		// page.html must download, never render.
		for _, h := range hrefs {
			if !strings.HasPrefix(h, ts.URL) || strings.Contains(strings.ToLower(h), "javascript") {
				continue // a javascript link made relative by the sanitizer is a harmless 404
			}
			if err := chromedp.Do(ctx, chromedp.Navigate(h)); err != nil && !strings.Contains(err.Error(), "ERR_ABORTED") {
				t.Errorf("%s -> %s: %v", p, h, err)
			}
		}
		for _, pr := range w.take() {
			t.Errorf("%s: %s", p, pr)
		}
	}
	// The bytes were there: the page shows them as text.
	var text string
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/s/evil/"), into(chromedp.Text(chromedp.CSS(`main`)), &text)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<script>alert('fm')</script>", "<img src=x onerror=alert('file')>.md", "</td><script>alert('fm-meta')</script>"} {
		if !strings.Contains(text, want) {
			t.Errorf("skill page does not show %q as text", want)
		}
	}
	for _, pr := range w.take() {
		t.Errorf("final: %s", pr)
	}
}
