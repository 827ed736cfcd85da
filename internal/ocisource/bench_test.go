package ocisource_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/ocisource"
	"github.com/skillport/skillport/internal/ocitest"
)

// benchTree is the tree benchmarked: examples/skills, or with
// SKILLPORT_OCI_BENCH_SKILLS=N a generated tree of N skills of two files.
func benchTree(b *testing.B) string {
	n, _ := strconv.Atoi(os.Getenv("SKILLPORT_OCI_BENCH_SKILLS"))
	if n <= 0 {
		return examples
	}
	dir := b.TempDir()
	for i := range n {
		name := fmt.Sprintf("skill-%04d", i)
		if err := os.MkdirAll(filepath.Join(dir, name, "references"), 0o755); err != nil {
			b.Fatal(err)
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: Generated skill %d for the OCI benchmark.\n---\n\n# %s\n\nSee references/notes.md.\n", name, i, name)
		if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(md), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "references", "notes.md"), fmt.Appendf(nil, "notes of %s\n", name), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkColdServeOCIvsDir builds the catalog a cold `serve oci://…`
// builds (resolve, manifests, every blob fetched and verified) and the one
// `serve DIR` builds, and reports the ratio of their times as oci/dir.
func BenchmarkColdServeOCIvsDir(b *testing.B) {
	reg := ocitest.Start(b)
	ctx := context.Background()
	tree := benchTree(b)
	cat, err := catalog.OpenDir(tree, nil)
	if err != nil {
		b.Fatal(err)
	}
	r, err := ocisource.ParseRef("oci://" + reg.Host + "/bench:v1")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ocisource.Push(ctx, cat, r, nil); err != nil {
		b.Fatal(err)
	}
	cat.Close()
	var dirTime, ociTime time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		d, err := catalog.OpenDir(tree, nil)
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
		t1 := time.Now()
		s, err := ocisource.Open(ctx, r, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		ociTime += time.Since(t1)
		dirTime += t1.Sub(t0)
		if len(s.Catalog().Skills()) == 0 {
			b.Fatal("no skills")
		}
	}
	b.ReportMetric(float64(dirTime.Microseconds())/float64(b.N)/1000, "dir-ms/op")
	b.ReportMetric(float64(ociTime.Microseconds())/float64(b.N)/1000, "oci-ms/op")
	b.ReportMetric(float64(ociTime)/float64(dirTime), "oci/dir")
}
