package skillserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// answers asks c everything the catalog publishes, page by page, and
// returns each answer's bytes (request id left out) by request.
func answers(t *testing.T, c *rawClient, cat *catalog.Catalog) map[string]string {
	t.Helper()
	out := map[string]string{}
	ask := func(method string, params map[string]any) json.RawMessage {
		key, _ := json.Marshal(params)
		res, _, raw := c.call(method, params)
		out[method+" "+string(key)] = string(idRE.ReplaceAll(bytes.TrimSpace(raw), []byte(`"id":1`)))
		return res
	}
	for _, method := range []string{"skills/list", "resources/list"} {
		params := map[string]any{}
		for {
			var page struct {
				NextCursor string `json:"nextCursor"`
			}
			json.Unmarshal(ask(method, params), &page)
			if page.NextCursor == "" {
				break
			}
			params = map[string]any{"cursor": page.NextCursor}
		}
	}
	dirs := map[string]bool{}
	for _, s := range cat.Skills() {
		ask("skills/get", map[string]any{"uri": s.URI})
		for _, f := range s.Files {
			ask("resources/read", map[string]any{"uri": f.URI})
			for d := f.URI; ; {
				i := strings.LastIndexByte(d, '/')
				if i < 0 || strings.HasSuffix(d[:i], ":/") {
					break
				}
				d = d[:i]
				dirs[d] = true
			}
		}
	}
	for d := range dirs {
		if cat.Dir(d) == nil {
			t.Fatalf("%s is not a directory of the catalog", d)
		}
		ask("resources/directory/read", map[string]any{"uri": d})
	}
	return out
}

// A catalog served unpacked (catalog.Options.PackLater) is replaced by
// its packed copy without a notification, while clients read it, and
// every answer stays the same to the byte.
func TestCatalogSourcePack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "collections")
	if err := os.CopyFS(dir, os.DirFS("../catalog/testdata/collections")); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard, PackLater: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	src := published.NewCatalogSource(cat)
	var changes atomic.Int32
	defer src.OnChange(func(_, _ published.Snapshot) { changes.Add(1) })()
	s, _, err := skillserver.New(nil, src, &skillserver.Options{TTL: -1, Logger: discard, PageSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	c := connectRaw(t, s, "2025-11-25")
	before := answers(t, c, cat)
	if len(before) < 50 {
		t.Fatalf("%d answers: the fixture is too small to compare", len(before))
	}

	// Readers while the catalog is packed and swapped: each answer is
	// the one the unpacked catalog gave (-race sees any shared write).
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var reads atomic.Int64
	for range 2 {
		rc := connectRaw(t, s, "2025-11-25")
		wg.Go(func() {
			for _, sk := range cat.Skills() {
				select {
				case <-stop:
					return
				default:
				}
				for _, f := range sk.Files {
					params := map[string]any{"uri": f.URI}
					key, _ := json.Marshal(params)
					_, _, raw := rc.call("resources/read", params)
					if got := string(idRE.ReplaceAll(bytes.TrimSpace(raw), []byte(`"id":1`))); got != before["resources/read "+string(key)] {
						t.Errorf("resources/read %s during the swap: %s", f.URI, got)
						return
					}
					reads.Add(1)
				}
			}
		})
	}
	src.Pack()
	close(stop)
	wg.Wait()

	packed := src.Catalog()
	if packed == cat || packed.ID() != cat.ID() {
		t.Fatalf("after Pack the source serves %p (id %s), the unpacked catalog was %p (id %s)", packed, packed.ID(), cat, cat.ID())
	}
	if packed.Pack() != packed {
		t.Error("the catalog served after Pack is not packed")
	}
	after := answers(t, c, packed)
	for k, want := range before {
		if got := after[k]; got != want {
			t.Errorf("%s after Pack:\n%s\nbefore:\n%s", k, got, want)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d answers after Pack, %d before", len(after), len(before))
	}
	if n := changes.Load(); n != 0 {
		t.Errorf("Pack ran %d OnChange callbacks", n)
	}
	for _, n := range c.notes {
		t.Errorf("the client was notified of the swap: %s", n)
	}
	t.Logf("%d answers compared, %d reads during the swap", len(before), reads.Load())
	src.Pack()
	if src.Catalog() != packed {
		t.Error("a second Pack replaced the packed catalog")
	}
}

// Pack never puts back a snapshot that a reload replaced meanwhile.
func TestCatalogSourcePackAfterReload(t *testing.T) {
	dir := writeTree(t, t.TempDir(), map[string]string{"pdf/SKILL.md": skillMD("pdf", "PDFs.")})
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard, PackLater: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	src := published.NewCatalogSource(cat)
	writeTree(t, dir, map[string]string{"docx/SKILL.md": skillMD("docx", "Word.")})
	next, err := cat.Reload()
	if err != nil {
		t.Fatal(err)
	}
	src.Swap(next)
	src.Pack()
	if got := src.Catalog(); got != next {
		t.Fatalf("after Pack the source serves %s, want the reload %s", fmt.Sprint(len(got.Skills()), " skills"), fmt.Sprint(len(next.Skills()), " skills"))
	}
}
