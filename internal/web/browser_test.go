package web_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/skillport/skillport/internal/published"
)

// chromium starts a real headless Chromium (the Debian package) with a
// fresh profile and returns a browser context. The test fails, never skips,
// when Chromium is missing.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("the browser tests need Chromium: apt-get install chromium")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel3)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// watch records every side effect a script could have that the page did
// not intend: dialogs (alert, confirm, prompt), console calls, log entries
// (CSP violations included) and requests to any origin but origin.
type watch struct {
	mu       sync.Mutex
	problems []string
}

func (w *watch) add(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

func (w *watch) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.problems
	w.problems = nil
	return p
}

func watchPage(t *testing.T, ctx context.Context, origin string) *watch {
	w := &watch{}
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			w.add("dialog %s: %q", ev.Type, ev.Message)
			// Commands cannot run inside the listener: dismiss from another goroutine.
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		case *runtime.EventConsoleAPICalled:
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			w.add("console.%s(%s)", ev.Type, strings.Join(args, ", "))
		case *runtime.EventExceptionThrown:
			w.add("exception: %s %s", ev.ExceptionDetails.Text, ev.ExceptionDetails.URL)
		case *log.EventEntryAdded:
			w.add("log %s/%s: %s (%s)", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
		case *network.EventRequestWillBeSent:
			u, err := url.Parse(ev.Request.URL)
			if err != nil || (u.Scheme+"://"+u.Host != origin && u.Scheme != "data") {
				w.add("request to %s", ev.Request.URL)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, call(runtime.Enable, cdp.Empty{}), call(log.Enable, cdp.Empty{}),
		call(network.Enable, network.EnableParams{}), call(page.Enable, page.EnableParams{})); err != nil {
		t.Fatal(err)
	}
	return w
}

// call turns a protocol command into an action.
func call[P, R any](c cdp.Command[P, R], p P) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, c, p)
		return err
	})
}

// into runs a for a result and stores it in *v.
func into[T any](a chromedp.Action[T], v *T) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) (err error) {
		*v, err = a(ctx, t)
		return err
	})
}

func pollJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(10*time.Second))(ctx, t)
		return err
	})
}

func saveScreenshot(t *testing.T, name string, buf []byte) {
	dir := os.Getenv("SKILLPORT_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserFlow drives the catalog as a person does: load it, search as
// they type, open a skill, open a file, copy a snippet; and takes the
// README's screenshots (light, dark, narrow). Nothing may log, alert or
// reach another origin on the way.
func TestBrowserFlow(t *testing.T) {
	fsys := sampleFS()
	for i, d := range []string{"Write commit messages in this team's style.", "Fill PDF forms from JSON data.",
		"Draft release notes from merged pull requests.", "Summarise a spreadsheet into a short report."} {
		n := []string{"git-commit", "pdf-forms", "release-notes", "sheet-summary"}[i]
		fsys["team/"+n+"/SKILL.md"] = skillMD(n, d, "# "+n+"\n\nSteps:\n\n1. Read the input.\n2. Do the work.\n")
	}
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, fsys)), nil)
	ctx := chromium(t)
	w := watchPage(t, ctx, ts.URL)
	var count, h1, file, copied, clip string
	var light, dark, narrow []byte
	steps := []struct {
		name string
		act  chromedp.Action[chromedp.Void]
	}{
		{"load the catalog", chromedp.Steps(
			chromedp.Navigate(ts.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS(`#results li`)),
			into(chromedp.FullScreenshot(100), &light),
		)},
		{"search as you type", chromedp.Steps(
			chromedp.SendKeys(chromedp.CSS(`#q`), "release"),
			pollJS(`document.querySelectorAll('#results li').length === 1 && document.querySelector('#results .name').textContent === 'release-notes'`),
			into(chromedp.Text(chromedp.CSS(`#count`)), &count),
		)},
		{"open a skill", chromedp.Steps(
			chromedp.Click(chromedp.CSS(`#results li a`)),
			chromedp.WaitVisible(chromedp.CSS(`article.doc h1`)),
			into(chromedp.Text(chromedp.CSS(`article.doc h1`)), &h1),
		)},
		{"open a file", chromedp.Steps(
			chromedp.Click(chromedp.CSS(`table.files a[href$="/SKILL.md"]`)),
			chromedp.WaitVisible(chromedp.CSS(`pre.file`)),
			into(chromedp.Text(chromedp.CSS(`pre.file`)), &file),
		)},
		{"copy a snippet", chromedp.Steps(
			chromedp.Navigate(ts.URL+"/s/team/release-notes/"),
			chromedp.WaitVisible(chromedp.CSS(`.snippet button.copy`)),
			call(page.BringToFront, cdp.Empty{}),
			chromedp.Click(chromedp.CSS(`.snippet button.copy`)),
			pollJS(`document.querySelector('.snippet button.copy').textContent === 'Copied'`),
			into(chromedp.Text(chromedp.CSS(`.snippet button.copy`)), &copied),
			into(chromedp.Evaluate[string](`Promise.race([navigator.clipboard.readText(), new Promise(r => setTimeout(() => r("clipboard read timed out"), 3000))])`, chromedp.EvalAwaitPromise), &clip),
		)},
		{"dark theme", chromedp.Steps(
			call(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}),
			chromedp.Navigate(ts.URL+"/s/pdf/"),
			chromedp.WaitVisible(chromedp.CSS(`article.doc table`)),
			into(chromedp.FullScreenshot(100), &dark),
		)},
		{"narrow screen", chromedp.Steps(
			call(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}}),
			chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
			chromedp.Navigate(ts.URL+"/s/pdf/"),
			chromedp.WaitVisible(chromedp.CSS(`article.doc`)),
			into(chromedp.CaptureScreenshot(), &narrow),
		)},
	}
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name}, Setting: browser.PermissionSettingGranted, Origin: ts.URL}); err != nil {
			t.Fatalf("granting %s: %v", name, err)
		}
	}
	for _, s := range steps {
		if err := chromedp.Do(ctx, s.act); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for _, p := range w.take() {
			t.Errorf("%s: %s", s.name, p)
		}
	}
	if count != "Showing 1 match" {
		t.Errorf("count after search: %q", count)
	}
	if h1 != "release-notes" {
		t.Errorf("skill page h1 %q", h1)
	}
	if !strings.HasPrefix(file, "---\nname: release-notes\n") {
		t.Errorf("file view shows %q", file)
	}
	if copied != "Copied" || !strings.Contains(clip, `"include"`) || !strings.Contains(clip, ts.URL+"/mcp") {
		t.Errorf("copy: button %q, clipboard %q", copied, clip)
	}
	for name, b := range map[string][]byte{"catalog-light.png": light, "skill-dark.png": dark, "skill-narrow.png": narrow} {
		if len(b) < 1000 {
			t.Errorf("%s: %d bytes", name, len(b))
		}
		saveScreenshot(t, name, b)
	}
}

// TestBrowserNoScript reads and searches the catalog with JavaScript off:
// the search form falls back to /?q=.
func TestBrowserNoScript(t *testing.T) {
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, sampleFS())), nil)
	ctx := chromium(t)
	w := watchPage(t, ctx, ts.URL)
	var loc, names string
	err := chromedp.Do(ctx,
		call(emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}),
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#q`)),
		chromedp.SendKeys(chromedp.CSS(`#q`), "review"),
		chromedp.Submit(chromedp.CSS(`#q`)),
		// The page before the submit has a #results too: wait for the new
		// document, or the text is asked of a node the navigation removed.
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			for {
				if l, err := chromedp.Location()(ctx, t); err == nil {
					if loc = l; strings.HasSuffix(loc, "/?q=review") {
						return nil
					}
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("the form never navigated to /?q=review (at %s): %w", loc, ctx.Err())
				case <-time.After(50 * time.Millisecond):
				}
			}
		}),
		chromedp.WaitVisible(chromedp.CSS(`#results`)),
		into(chromedp.Text(chromedp.CSS(`#results`)), &names),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(loc, "/?q=review") || !strings.Contains(names, "review") || strings.Contains(names, "pdf") {
		t.Errorf("no-JS search: at %s, results %q", loc, names)
	}
	for _, p := range w.take() {
		t.Error(p)
	}
}
