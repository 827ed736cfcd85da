package host

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillport/skillport/host/approval"
)

func TestHappyPathIsLazyAndVerified(t *testing.T) {
	f := newFake("docs-server")
	uri := f.addSkill("pdf-processing", "Extract PDF text", map[string]string{
		"references/GUIDE.md":  "guide",
		"templates/invoice.md": "invoice",
	})
	rec := &recorder{}
	rec.decide = func(*approval.Request) approval.Decision {
		// Nothing has been fetched at approval time.
		if n := f.totalReads(); n != 0 {
			t.Errorf("%d reads before approval was given", n)
		}
		return approval.Decision{Allow: true}
	}
	h := connect(t, &Options{Approver: rec}, Origin{Label: "docs", Transport: f.transport(t)})
	if n := f.totalReads(); n != 0 {
		t.Fatalf("connect and listing fetched %d files; want none (H-46)", n)
	}
	e, err := h.Lookup("pdf-processing")
	if err != nil {
		t.Fatal(err)
	}
	if e.Origin != "docs" || e.URI != uri || e.Status() != "verified-on-load" {
		t.Fatalf("entry %+v", e)
	}
	l, err := h.Load(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(l.Document.Body), "# pdf-processing") || f.totalReads() != 1 {
		t.Fatalf("load read %d files; body %q", f.totalReads(), l.Document.Body)
	}
	file, err := l.ReadFile(context.Background(), "references/GUIDE.md")
	if err != nil || string(file.Data) != "guide" || !file.Verified {
		t.Fatalf("ReadFile = %+v, %v", file, err)
	}
	ents, err := l.ListDir(context.Background(), "")
	if err != nil || len(ents) != 3 {
		t.Fatalf("ListDir = %+v, %v", ents, err)
	}
	if ents[0].Name != "SKILL.md" || ents[1].Name != "references" || !ents[1].Dir {
		t.Errorf("ListDir order/kinds: %+v", ents)
	}
	if rec.count(approval.Load) != 1 {
		t.Errorf("approval asked %d times", rec.count(approval.Load))
	}
}

func TestNoExtensionNoSkillsCalls(t *testing.T) {
	f := newFake("plain")
	f.noExtension = true
	f.addSkill("x", "d", nil)
	h := connect(t, nil, Origin{Label: "plain", Transport: f.transport(t)})
	if f.listCalls != 0 {
		t.Errorf("skills/list called %d times on a server that did not declare the extension (H-1)", f.listCalls)
	}
	st := h.Origins()[0]
	if st.Declared || !errors.Is(st.Err, ErrUnavailable) || len(h.Skills()) != 0 {
		t.Errorf("status %+v", st)
	}
}

func TestExperimentalDeclarationAccepted(t *testing.T) {
	f := newFake("old-sdk")
	f.experimental = true
	f.addSkill("x", "d", nil)
	h := connect(t, nil, Origin{Label: "old", Transport: f.transport(t)})
	if len(h.Skills()) != 1 {
		t.Fatalf("skills %v; diagnostics:\n%s", names(h.Skills()), diags(h))
	}
}

func TestExtensionWithoutResourcesUnavailable(t *testing.T) {
	f := newFake("broken")
	f.noResources = true
	f.addSkill("x", "d", nil)
	h := connect(t, nil, Origin{Label: "broken", Transport: f.transport(t)})
	if len(h.Skills()) != 0 || !hasDiag(h, "broken", "resources capability") {
		t.Errorf("H-49: skills %v, diagnostics:\n%s", names(h.Skills()), diags(h))
	}
}

// TestRebuildsCoalesce checks that concurrent rebuild requests share
// rebuilds, and that each request returns only after a rebuild that saw its
// change.
func TestRebuildsCoalesce(t *testing.T) {
	var (
		r       rebuilds
		mu      sync.Mutex
		version int // bumped by each caller before it asks for a rebuild
		built   int // the version the last finished rebuild saw
		runs    int
	)
	rebuild := func() {
		mu.Lock()
		saw := version
		runs++
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		built = saw
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			mu.Lock()
			version++
			mine := version
			mu.Unlock()
			r.do(rebuild)
			mu.Lock()
			defer mu.Unlock()
			if built < mine {
				t.Errorf("a request returned before its change was built (built %d, mine %d)", built, mine)
			}
		})
	}
	wg.Wait()
	if runs >= 50 || runs < 1 {
		t.Errorf("%d rebuilds for 50 concurrent requests; want them shared", runs)
	}
}
