package registry_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/skillport/skillport/catalog"
)

// writeTree writes n skills under dir: a SKILL.md and a distinct ~1 KiB
// reference each, a license shared by all (stored once), and every
// twentieth skill under a team prefix.
func writeTree(t testing.TB, dir string, n int) {
	t.Helper()
	license := strings.Repeat("Permission is hereby granted, free of charge.\n", 40)
	for i := range n {
		name := fmt.Sprintf("skill-%05d", i)
		p := filepath.Join(dir, name)
		if i%20 == 0 {
			p = filepath.Join(dir, fmt.Sprintf("team-%02d", i%7), name)
		}
		if err := os.MkdirAll(filepath.Join(p, "references"), 0o755); err != nil {
			t.Fatal(err)
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: Synthetic skill number %d for the registry tests and benchmarks.\nlicense: MIT\n---\n\n# %s\n\nRead references/GUIDE.md.\n", name, i, name)
		guide := fmt.Sprintf("# Guide %d\n\n%s", i, strings.Repeat(fmt.Sprintf("Step %d of the procedure.\n", i), 40))
		for f, body := range map[string]string{"SKILL.md": md, "references/GUIDE.md": guide, "LICENSE.txt": license} {
			if err := os.WriteFile(filepath.Join(p, f), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// cachedTree returns a tree of n skills written by writeTree, kept under
// os.TempDir() for later runs (removing 10,000 directories costs more than
// the test): it is renamed into place only when complete, and must not be
// modified; see overlay.
func cachedTree(t testing.TB, n int) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("skillport-registry-tree-v1-%d", n))
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "skillport-registry-tree-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, tmp, n)
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(dir); serr != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// overlay is a directory with some files replaced.
type overlay struct {
	fs.FS
	files fstest.MapFS
}

func (o overlay) Open(name string) (fs.File, error) {
	if _, ok := o.files[name]; ok {
		return o.files.Open(name)
	}
	return o.FS.Open(name)
}

func TestPublish10k(t *testing.T) {
	dir := cachedTree(t, 10_000)
	dsn := newDB(t)
	conn := connect(t, dsn)
	cat := openCat(t, dir, "")
	res := publish(t, conn, cat, nil)
	if len(res.Added) != 10_000 || res.BlobsStored != 20_001 {
		t.Fatalf("publishing 10,000 skills: %d added, %d blobs stored; want 10,000 and 20,001 (the license once)", len(res.Added), res.BlobsStored)
	}
	r1, r2 := openReplica(t, dsn), openReplica(t, dsn)
	sameContent(t, cat, r1.Snapshot())

	changed, err := catalog.Open(overlay{os.DirFS(dir), fstest.MapFS{"skill-00001/references/GUIDE.md": {Data: []byte("changed\n")}}}, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	res = publish(t, conn, changed, nil)
	if len(res.Changed) != 1 || res.Unchanged != 9_999 || res.BlobsStored != 1 {
		t.Fatalf("re-publishing one change: %d changed, %d unchanged, %d blobs", len(res.Changed), res.Unchanged, res.BlobsStored)
	}
	for _, r := range []any{r1, r2} {
		src := r.(interface{ Generation() int64 })
		waitFor(t, "the replicas", func() bool { return src.Generation() == res.Generation })
	}
	f := r2.Snapshot().File("skill://skill-00001/references/GUIDE.md")
	if data, err := r2.Snapshot().ReadFile(context.Background(), f); err != nil || string(data) != "changed\n" {
		t.Errorf("replica after the change: %q, %v", data, err)
	}
}
