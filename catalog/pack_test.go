package catalog

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog/internal/gen"
	"github.com/skillport/skillport/internal/cputime"
	"github.com/skillport/skillport/internal/skilltest"
)

// dump renders everything a catalog publishes or reports, in a fixed
// order, so that two catalogs can be compared as text.
func dump(c *Catalog) string {
	var sb strings.Builder
	st := c.Stats()
	st.Duration = 0
	fmt.Fprintf(&sb, "id %s\nstats %+v\n", c.ID(), st)
	for _, s := range c.Skills() {
		fmt.Fprintf(&sb, "skill %s root=%s path=%s name=%s dir=%s size=%d fm=%s\n", s.URI, s.Root, s.Path, s.Name, s.Dir, s.Size, s.Frontmatter.JSON())
		for _, f := range s.Files {
			fmt.Fprintf(&sb, "  file %+v\n", *f)
		}
		for _, f := range s.Findings {
			fmt.Fprintf(&sb, "  finding %+v\n", f)
		}
	}
	for _, uri := range slices.Sorted(maps.Keys(c.files)) {
		fmt.Fprintf(&sb, "file %s %+v\n", uri, *c.File(uri))
	}
	for _, uri := range slices.Sorted(maps.Keys(c.dirs)) {
		fmt.Fprintf(&sb, "dir %s\n", dirString(c.Dir(uri)))
	}
	for _, d := range c.Diagnostics() {
		fmt.Fprintf(&sb, "diag %s %s %s %d:%d %v %s\n", d.Path, d.Skill, d.Rule, d.Line, d.Column, d.Severity, d.Message)
	}
	return sb.String()
}

// A catalog built with PackLater is the catalog OpenDir packs, and Pack
// copies it into the packed one without changing a byte of what it
// publishes, while readers go on reading the unpacked one.
func TestPackLater(t *testing.T) {
	dir := collectionTree(t)
	packed, err := OpenDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer packed.Close()
	later, err := OpenDir(dir, &Options{Logger: quiet, PackLater: true})
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	if later.Stats().Skills < 10 || len(later.Diagnostics()) < 10 {
		t.Fatalf("the fixture publishes %d skills with %d diagnostics: too few to compare", later.Stats().Skills, len(later.Diagnostics()))
	}
	want := dump(packed)
	if got := dump(later); got != want {
		t.Fatalf("PackLater catalog differs from the packed one at line %d", firstDiff(strings.Split(got, "\n"), strings.Split(want, "\n")))
	}
	if packed.Pack() != packed {
		t.Error("Pack of a packed catalog made a copy")
	}

	// Readers of the unpacked catalog while it is packed: -race reports
	// any write to what they read.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if dump(later) != want {
					t.Error("the unpacked catalog changed while it was packed")
					return
				}
			}
		})
	}
	p := later.Pack()
	close(stop)
	wg.Wait()

	if p == later {
		t.Fatal("Pack returned the unpacked catalog")
	}
	if got := dump(p); got != want {
		t.Fatalf("packed copy differs at line %d", firstDiff(strings.Split(got, "\n"), strings.Split(want, "\n")))
	}
	if got := dump(later); got != want {
		t.Fatal("Pack changed the catalog it copied")
	}
	checkLinked(t, p)
	for _, s := range later.Skills() {
		if p.Skill(s.URI) == s || p.File(s.URI) == later.File(s.URI) {
			t.Fatalf("the packed copy shares %s with the unpacked catalog", s.URI)
		}
	}
	if p.Pack() != p {
		t.Error("Pack of the packed copy made another copy")
	}

}

// The packed copy takes over what lets a reload of an unchanged tree skip
// the walk (the listings the build kept), so that serving the copy costs
// its reloads nothing, and those reloads share the copy's packed objects.
func TestPackKeepsUnchangedReload(t *testing.T) {
	old := racyWindow
	racyWindow = -time.Hour // trust every listing, however recent
	defer func() { racyWindow = old }()
	dir := skilltest.WriteTree(t, map[string]string{
		"pdf/SKILL.md":          md("pdf", "PDFs."),
		"pdf/refs/FORMS.md":     "# Forms\n",
		"renamed-docx/SKILL.md": md("docx", "Word."), // a warning: the name is not the folder's
	})
	c, err := OpenDir(dir, &Options{Logger: quiet, PackLater: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := c.Pack()
	if len(p.Diagnostics()) == 0 {
		t.Fatal("the tree gives no diagnostic: nothing tells the reloads apart")
	}
	r, err := p.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if r.ID() != p.ID() || r.Stats().Hashed != 0 {
		t.Fatalf("reload of the packed copy: id %s (was %s), %d files hashed", r.ID(), p.ID(), r.Stats().Hashed)
	}
	// Only the reload that skipped the walk shares the diagnostics.
	if &r.Diagnostics()[0] != &p.Diagnostics()[0] {
		t.Error("reload of the packed copy walked the tree: the copy did not take over the listings")
	}
	for _, s := range p.Skills() {
		if r.File(s.URI) != p.File(s.URI) {
			t.Fatalf("reload of the packed copy does not share %s", s.URI)
		}
	}
	if r.Pack() != r {
		t.Error("a reload of a packed catalog is not packed")
	}
}

// BenchmarkPack packs the catalog of the generated 10,000-skill tree
// ([Catalog.Pack] of a PackLater build): the compaction that ends every
// build, which serve runs in the background once it answers. cpu-ns/op is
// the CPU time it took (all goroutines, garbage collection included).
func BenchmarkPack(b *testing.B) {
	t := treeFor(b, gen.Options{Skills: *benchSkills, Seed: benchSeed, Scale: 1})
	o := benchOptions()
	o.PackLater = true
	c, err := OpenDir(t.dir, o)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		cpu0 := cputime.Self()
		if c.Pack() == c {
			b.Fatal("Pack returned the unpacked catalog")
		}
		cpu += cputime.Self() - cpu0
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// firstDiff is the index of the first line where a and b differ.
func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
