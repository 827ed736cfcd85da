package ocisource_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"oras.land/oras-go/v2/registry/remote"

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
// builds (resolve, manifests, every blob fetched and verified), the one a
// restart builds with the blob cache the first run filled, and the one
// `serve DIR` builds, and reports the ratios of their times as oci/dir
// and restart/dir.
func BenchmarkColdServeOCIvsDir(b *testing.B) {
	reg := ocitest.StartCached(b)
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
	var dirTime, ociTime, warmTime time.Duration
	b.ResetTimer()
	for b.Loop() {
		cache := b.TempDir()
		t0 := time.Now()
		d, err := catalog.OpenDir(tree, nil)
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
		t1 := time.Now()
		s, err := ocisource.Open(ctx, r, &ocisource.Options{CacheDir: cache}, nil)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := ocisource.Open(ctx, r, &ocisource.Options{CacheDir: cache}, nil); err != nil {
			b.Fatal(err)
		}
		warmTime += time.Since(t2)
		ociTime += t2.Sub(t1)
		dirTime += t1.Sub(t0)
		if len(s.Catalog().Skills()) == 0 {
			b.Fatal("no skills")
		}
	}
	b.ReportMetric(float64(dirTime.Microseconds())/float64(b.N)/1000, "dir-ms/op")
	b.ReportMetric(float64(ociTime.Microseconds())/float64(b.N)/1000, "oci-ms/op")
	b.ReportMetric(float64(warmTime.Microseconds())/float64(b.N)/1000, "restart-ms/op")
	b.ReportMetric(float64(ociTime)/float64(dirTime), "oci/dir")
	b.ReportMetric(float64(warmTime)/float64(dirTime), "restart/dir")
}

// BenchmarkTagUpdateVsCold moves a tag between two pushes that differ in
// one skill's SKILL.md and times Update (what serve does at --poll)
// against a cold Open of the same tag, reporting update/cold.
func BenchmarkTagUpdateVsCold(b *testing.B) {
	reg := ocitest.StartCached(b)
	ctx := context.Background()
	tree := b.TempDir()
	if err := os.CopyFS(tree, os.DirFS(benchTree(b))); err != nil {
		b.Fatal(err)
	}
	push := func(tag string) string {
		cat, err := catalog.OpenDir(tree, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cat.Close()
		r, _ := ocisource.ParseRef("oci://" + reg.Host + "/bench:" + tag)
		res, err := ocisource.Push(ctx, cat, r, nil)
		if err != nil {
			b.Fatal(err)
		}
		return res.Digest
	}
	digests := []string{push("a")}
	cat, _ := catalog.OpenDir(tree, nil)
	md := filepath.Join(tree, cat.Skills()[0].Dir, "SKILL.md")
	cat.Close()
	data, err := os.ReadFile(md)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(md, append(data, "\nChanged.\n"...), 0o644); err != nil {
		b.Fatal(err)
	}
	digests = append(digests, push("b"))
	repo, _ := remote.NewRepository(reg.Host + "/bench")
	repo.PlainHTTP = true
	retag := func(d string) {
		desc, err := repo.Resolve(ctx, d)
		if err != nil {
			b.Fatal(err)
		}
		if err := repo.Tag(ctx, desc, "main"); err != nil {
			b.Fatal(err)
		}
	}
	retag(digests[0])
	r, _ := ocisource.ParseRef("oci://" + reg.Host + "/bench:main")
	src, err := ocisource.Open(ctx, r, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	var cold, update time.Duration
	i := 0
	for b.Loop() {
		i++
		retag(digests[i%2])
		t0 := time.Now()
		if _, changed, err := src.Update(ctx); err != nil || !changed {
			b.Fatalf("update: %v %v", changed, err)
		}
		t1 := time.Now()
		if _, err := ocisource.Open(ctx, r, nil, nil); err != nil {
			b.Fatal(err)
		}
		cold += time.Since(t1)
		update += t1.Sub(t0)
	}
	b.ReportMetric(float64(update.Microseconds())/float64(b.N)/1000, "update-ms/op")
	b.ReportMetric(float64(cold.Microseconds())/float64(b.N)/1000, "cold-ms/op")
	b.ReportMetric(float64(update)/float64(cold), "update/cold")
}
