package registry_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/registry"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// copyTree copies src into a new temporary directory.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := os.CopyFS(dst, os.DirFS(src))
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func openCat(t testing.TB, dir, prefix string) *catalog.Catalog {
	t.Helper()
	c, err := catalog.OpenDir(dir, &catalog.Options{Prefix: prefix, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := registry.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func publish(t testing.TB, conn *pgx.Conn, c *catalog.Catalog, opts *registry.PublishOptions) *registry.PublishResult {
	t.Helper()
	res, err := registry.Publish(context.Background(), conn, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func openReplica(t testing.TB, dsn string) *registry.Source {
	t.Helper()
	src, err := registry.Open(context.Background(), dsn, &registry.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// sameContent checks that a replica's snapshot publishes exactly what the
// directory catalog does: skills, frontmatter, files, directories, bytes.
func sameContent(t *testing.T, want *catalog.Catalog, got published.Snapshot) {
	t.Helper()
	dirSnap := published.NewCatalogSource(want).Snapshot()
	if len(got.Skills()) != len(want.Skills()) {
		t.Fatalf("replica serves %d skills, the directory %d", len(got.Skills()), len(want.Skills()))
	}
	for i, s := range want.Skills() {
		g := got.Skills()[i]
		if g.URI != s.URI || g.Name != s.Name || !bytes.Equal(g.Frontmatter.JSON(), s.Frontmatter.JSON()) || g.Size != s.Size || len(g.Files) != len(s.Files) {
			t.Errorf("skill %d: replica %s %q %s, directory %s %q %s", i, g.URI, g.Name, g.Frontmatter.JSON(), s.URI, s.Name, s.Frontmatter.JSON())
			continue
		}
		for j, f := range s.Files {
			gf := g.Files[j]
			if gf.URI != f.URI || gf.Digest != f.Digest || gf.MIMEType != f.MIMEType || gf.Text != f.Text || gf.Name != f.Name {
				t.Errorf("%s file %d: replica %+v, directory %+v", s.URI, j, gf, f)
			}
		}
	}
	for _, f := range dirSnap.Files() {
		gf := got.File(f.URI)
		if gf == nil {
			t.Errorf("replica does not serve %s", f.URI)
			continue
		}
		data, err := got.ReadFile(context.Background(), gf)
		if err != nil {
			t.Errorf("replica reading %s: %v", f.URI, err)
			continue
		}
		wantData, _ := want.ReadFile(f)
		if !bytes.Equal(data, wantData) {
			t.Errorf("replica serves other bytes for %s", f.URI)
		}
	}
	if n, m := len(got.Files()), len(dirSnap.Files()); n != m {
		t.Errorf("replica lists %d files, the directory %d", n, m)
	}
	// Directory resources: every one the directory serves, same children.
	uris := map[string]bool{}
	for _, s := range want.Skills() {
		uris[s.Root] = true
		segs := strings.Split(s.Path, "/")
		for i := 1; i < len(segs); i++ {
			uris["skill://"+strings.Join(segs[:i], "/")] = true
		}
		for _, f := range s.Files {
			for d := f.URI[:strings.LastIndex(f.URI, "/")]; len(d) > len(s.Root); d = d[:strings.LastIndex(d, "/")] {
				uris[d] = true
			}
		}
	}
	for uri := range uris {
		wd, gd := want.Dir(uri), got.Dir(uri)
		if wd == nil {
			continue
		}
		if gd == nil {
			t.Errorf("replica has no directory %s", uri)
			continue
		}
		names := func(d *catalog.Dir) (out []string) {
			for _, c := range d.Children {
				out = append(out, c.URI)
			}
			return out
		}
		if !slices.Equal(names(wd), names(gd)) {
			t.Errorf("directory %s: replica children %v, directory %v", uri, names(gd), names(wd))
		}
		if (wd.Skill == nil) != (gd.Skill == nil) || wd.Skill != nil && wd.Skill.URI != gd.Skill.URI {
			t.Errorf("directory %s belongs to a different skill on the replica", uri)
		}
	}
}

func TestPublishExamples(t *testing.T) {
	dsn := newDB(t)
	conn := connect(t, dsn)
	cat := openCat(t, examples, "")
	res := publish(t, conn, cat, &registry.PublishOptions{Publisher: "alice", Commit: "abc123"})
	if len(res.Added) != 5 || len(res.Changed) != 0 || len(res.Removed) != 0 || res.BlobsStored == 0 {
		t.Fatalf("first publish: %+v, want 5 added", res)
	}
	gen := res.Generation
	// Unchanged: no versions, no generation.
	res = publish(t, conn, openCat(t, examples, ""), &registry.PublishOptions{Publisher: "bob"})
	if len(res.Added)+len(res.Changed)+len(res.Removed) != 0 || res.Unchanged != 5 || res.Generation != gen {
		t.Errorf("re-publishing the same tree: %+v, want 5 unchanged and generation %d", res, gen)
	}
	src := openReplica(t, dsn)
	sameContent(t, cat, src.Snapshot())
	vs, err := registry.Versions(context.Background(), conn, "code-review")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].PublishedBy != "alice" || vs[0].Commit != "abc123" || !vs[0].Current || vs[0].Digest == "" || vs[0].Size == 0 {
		t.Errorf("versions of code-review: %+v", vs)
	}
}

func TestMigrateVersioned(t *testing.T) {
	conn := connect(t, newDB(t))
	ctx := context.Background()
	applied, err := registry.Migrate(ctx, conn)
	if err != nil || len(applied) == 0 || applied[len(applied)-1] != registry.SchemaVersion() {
		t.Fatalf("migrating an empty database: %v, %v", applied, err)
	}
	if applied, err := registry.Migrate(ctx, conn); err != nil || len(applied) != 0 {
		t.Errorf("migrating again: %v, %v; want nothing applied", applied, err)
	}
	conn.Exec(ctx, `INSERT INTO skillport_migrations (version, name) VALUES (9999, 'future')`)
	if _, err := registry.Migrate(ctx, conn); !errors.Is(err, registry.ErrSchema) {
		t.Errorf("a schema newer than the binary: %v, want ErrSchema", err)
	}
}

func TestNamespaces(t *testing.T) {
	conn := connect(t, newDB(t))
	ctx := context.Background()
	publish(t, conn, openCat(t, examples, "acme"), nil)
	publish(t, conn, openCat(t, examples, "globex"), nil)
	for _, ns := range []string{"acme/billing", "", "globex/x"} {
		_, err := registry.Publish(ctx, conn, openCat(t, examples, ns), nil)
		if !errors.Is(err, registry.ErrOverlap) {
			t.Errorf("publishing into %q inside or around another namespace: %v, want ErrOverlap", ns, err)
		}
	}
	// acme drops a skill: removed in acme only.
	dir := copyTree(t, examples)
	os.RemoveAll(filepath.Join(dir, "git-workflow"))
	res := publish(t, conn, openCat(t, dir, "acme"), nil)
	if len(res.Removed) != 1 || res.Removed[0].Path != "acme/git-workflow" || len(res.Added)+len(res.Changed) != 0 {
		t.Errorf("removing a skill: %+v", res)
	}
	vs, err := registry.Versions(ctx, conn, "globex/git-workflow")
	if err != nil || !vs[len(vs)-1].Current {
		t.Errorf("globex/git-workflow after acme removed its own: %+v %v", vs, err)
	}
	// Content shared by both namespaces was stored once.
	var blobs, files int
	conn.QueryRow(ctx, `SELECT count(*) FROM blobs`).Scan(&blobs)
	files = len(published.NewCatalogSource(openCat(t, examples, "")).Snapshot().Files())
	if blobs > files {
		t.Errorf("%d blobs stored for %d distinct files published twice", blobs, files)
	}
}

func TestPublishRefusals(t *testing.T) {
	conn := connect(t, newDB(t))
	ctx := context.Background()
	publish(t, conn, openCat(t, examples, ""), nil)
	dir := copyTree(t, examples)
	os.WriteFile(filepath.Join(dir, "code-review", "SKILL.md"), []byte("---\nname: Not Valid\n---\n"), 0o644)
	_, err := registry.Publish(ctx, conn, openCat(t, dir, ""), nil)
	if !errors.Is(err, registry.ErrInvalid) || !strings.Contains(err.Error(), "code-review") {
		t.Errorf("publishing an invalid skill: %v, want ErrInvalid naming code-review", err)
	}
	dir = copyTree(t, examples)
	os.WriteFile(filepath.Join(dir, "code-review", "big.txt"), bytes.Repeat([]byte("x"), 10000), 0o644)
	_, err = registry.Publish(ctx, conn, openCat(t, dir, ""), &registry.PublishOptions{MaxBytes: 5000})
	if !errors.Is(err, registry.ErrTooLarge) {
		t.Errorf("publishing over MaxBytes: %v, want ErrTooLarge", err)
	}
	vs, _ := registry.Versions(ctx, conn, "code-review")
	if len(vs) != 1 {
		t.Errorf("a refused publish left %d versions of code-review, want 1", len(vs))
	}
}

// TestConcurrentPublish: a publish that read the namespace before another
// committed gets a conflict error, and nothing of it is stored.
func TestConcurrentPublish(t *testing.T) {
	dsn := newDB(t)
	connA, connB, watch := connect(t, dsn), connect(t, dsn), connect(t, dsn)
	ctx := context.Background()
	publish(t, connA, openCat(t, examples, "acme"), nil)
	dirA, dirB := copyTree(t, examples), copyTree(t, examples)
	os.WriteFile(filepath.Join(dirA, "code-review", "A.md"), []byte("from A\n"), 0o644)
	os.WriteFile(filepath.Join(dirB, "code-review", "B.md"), []byte("from B\n"), 0o644)
	var errB error
	var wg sync.WaitGroup
	optsA := &registry.PublishOptions{Publisher: "A"}
	registry.SetBeforeCommit(optsA, func(pgx.Tx) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errB = registry.Publish(ctx, connB, openCat(t, dirB, "acme"), &registry.PublishOptions{Publisher: "B"})
		}()
		// Wait until B is blocked behind A's lock on the namespace.
		for i := 0; i < 400; i++ {
			var n int
			watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n)
			if n > 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Error("publisher B never waited for A")
	})
	resA, errA := registry.Publish(ctx, connA, openCat(t, dirA, "acme"), optsA)
	wg.Wait()
	if errA != nil || len(resA.Changed) != 1 {
		t.Fatalf("publisher A: %+v, %v", resA, errA)
	}
	if !errors.Is(errB, registry.ErrConflict) || !strings.Contains(errB.Error(), "run publish again") {
		t.Fatalf("publisher B: %v, want a conflict error", errB)
	}
	vs, _ := registry.Versions(ctx, connA, "acme/code-review")
	if len(vs) != 2 || vs[1].PublishedBy != "A" {
		t.Errorf("versions after the race: %+v, want A's only", vs)
	}
	// B publishing again now succeeds on top of A.
	res := publish(t, connB, openCat(t, dirB, "acme"), nil)
	if len(res.Changed) != 1 || res.Changed[0].Version != 3 {
		t.Errorf("B again: %+v", res)
	}
}

// TestPublishDatabaseGone: the database connection dies just before COMMIT;
// nothing of the publish is visible.
func TestPublishDatabaseGone(t *testing.T) {
	dsn := newDB(t)
	conn, killer := connect(t, dsn), connect(t, dsn)
	ctx := context.Background()
	opts := &registry.PublishOptions{}
	registry.SetBeforeCommit(opts, func(tx pgx.Tx) {
		var pid int
		tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid)
		if _, err := killer.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Error(err)
		}
	})
	_, err := registry.Publish(ctx, conn, openCat(t, examples, "acme"), opts)
	if err == nil || !strings.Contains(err.Error(), "nothing was published") {
		t.Fatalf("publish whose connection died: %v, want an error saying nothing was published", err)
	}
	var versions, skills, blobs, ns int
	killer.QueryRow(ctx, `SELECT (SELECT count(*) FROM versions), (SELECT count(*) FROM skills), (SELECT count(*) FROM blobs), (SELECT count(*) FROM namespaces)`).Scan(&versions, &skills, &blobs, &ns)
	if versions+skills+blobs+ns != 0 {
		t.Errorf("half published: %d versions, %d skills, %d blobs, %d namespaces", versions, skills, blobs, ns)
	}
}

// TestConcurrentSharedContent: two namespaces publishing the same new
// content at once both succeed, and the content is stored once.
func TestConcurrentSharedContent(t *testing.T) {
	dsn := newDB(t)
	connA, connB, watch := connect(t, dsn), connect(t, dsn), connect(t, dsn)
	ctx := context.Background()
	var errB error
	var wg sync.WaitGroup
	optsA := &registry.PublishOptions{}
	registry.SetBeforeCommit(optsA, func(pgx.Tx) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errB = registry.Publish(ctx, connB, openCat(t, examples, "globex"), nil)
		}()
		for i := 0; i < 400; i++ {
			var n int
			watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n)
			if n > 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Error("publisher B never waited for A")
	})
	_, errA := registry.Publish(ctx, connA, openCat(t, examples, "acme"), optsA)
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("two namespaces publishing the same content: %v; %v", errA, errB)
	}
	var blobs int
	watch.QueryRow(ctx, `SELECT count(*) FROM blobs`).Scan(&blobs)
	if want := len(published.NewCatalogSource(openCat(t, examples, "")).Snapshot().Files()); blobs != want {
		t.Errorf("%d blobs stored, want %d", blobs, want)
	}
}
