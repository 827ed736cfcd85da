package registry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/registry"
)

// TestPublishParts publishes several sources in one transaction: two
// namespaces, one of them from two sources, each part's commit recorded
// with its versions, one generation for all.
func TestPublishParts(t *testing.T) {
	dsn := newDB(t)
	conn := connect(t, dsn)
	ctx := context.Background()
	// Two halves of the examples, published together as "team".
	a, b := copyTree(t, examples), copyTree(t, examples)
	os.RemoveAll(filepath.Join(a, "code-review"))
	for _, e := range []string{"acme", "git-workflow", "pdf-processing"} {
		os.RemoveAll(filepath.Join(b, e))
	}
	parts := []registry.Part{
		{Name: "one", Catalog: openCat(t, examples, "acme"), Commit: "c1"},
		{Name: "a", Catalog: openCat(t, a, "team"), Commit: "ca"},
		{Name: "b", Catalog: openCat(t, b, "team"), Commit: "cb"},
	}
	res, err := registry.PublishParts(ctx, conn, parts, &registry.PublishOptions{Publisher: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Namespace != "acme" || res[1].Namespace != "team" {
		t.Fatalf("results: %+v, want acme then team", res)
	}
	if len(res[0].Added) != 5 || len(res[1].Added) != 5 || res[0].Generation != res[1].Generation {
		t.Errorf("added %d and %d skills at generations %d and %d; want 5, 5 and one generation", len(res[0].Added), len(res[1].Added), res[0].Generation, res[1].Generation)
	}
	// Content both namespaces share is stored once, counted for acme.
	if res[0].BlobsStored == 0 || res[1].BlobsStored != 0 {
		t.Errorf("blobs stored: acme %d, team %d; want all of them counted for acme", res[0].BlobsStored, res[1].BlobsStored)
	}
	for path, commit := range map[string]string{"acme/code-review": "c1", "team/code-review": "cb", "team/git-workflow": "ca"} {
		vs, err := registry.Versions(ctx, conn, path)
		if err != nil || len(vs) != 1 || vs[0].Commit != commit {
			t.Errorf("versions of %s: %+v %v; want one, from commit %s", path, vs, err, commit)
		}
	}
	sk := openReplica(t, dsn).Snapshot().Skills()
	if len(sk) != 10 {
		t.Errorf("a replica serves %d skills, want 10", len(sk))
	}

	// team without b's skill: removed from team only, acme unchanged.
	res, err = registry.PublishParts(ctx, conn, parts[:2], nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Unchanged != 5 || len(res[1].Removed) != 1 || res[1].Removed[0].Path != "team/code-review" {
		t.Errorf("re-publishing without part b: %+v %+v", res[0], res[1])
	}
}

// TestPublishPartsRefused: sources that collide are refused naming both,
// and nothing of any of them is published.
func TestPublishPartsRefused(t *testing.T) {
	conn := connect(t, newDB(t))
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		prefixes [2]string
		want     error
		words    []string
	}{
		{"same skill in both", [2]string{"team", "team"}, registry.ErrCollision, []string{"team/acme/billing/refunds", "first-dir", "second-dir"}},
		{"nested namespaces", [2]string{"acme", "acme/tools"}, registry.ErrOverlap, []string{`"acme/tools"`, `"acme"`, "first-dir", "second-dir"}},
		{"root and another", [2]string{"team", ""}, registry.ErrOverlap, []string{"root namespace", "first-dir", "second-dir"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := []registry.Part{
				{Name: "first-dir", Catalog: openCat(t, examples, tc.prefixes[0])},
				{Name: "second-dir", Catalog: openCat(t, examples, tc.prefixes[1])},
			}
			_, err := registry.PublishParts(ctx, conn, parts, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
	// A part without a catalog is a caller's mistake: an error naming the
	// part, not a panic.
	_, err := registry.PublishParts(ctx, conn, []registry.Part{{Name: "first-dir", Catalog: openCat(t, examples, "team")}, {Name: "empty-part"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "empty-part") || !strings.Contains(err.Error(), "no catalog") {
		t.Errorf("a part without a catalog: %v", err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM namespaces`).Scan(&n); err == nil && n != 0 {
		t.Errorf("refused publishes left %d namespaces", n)
	}
	if _, err := registry.PublishParts(ctx, conn, nil, nil); err == nil {
		t.Error("a publish of no parts succeeded")
	}
}

// TestSetChecks: the rules the foreign keys enforced hold with the
// statement-level checks that replaced them.
func TestSetChecks(t *testing.T) {
	conn := connect(t, newDB(t))
	ctx := context.Background()
	publish(t, conn, openCat(t, examples, "acme"), nil)
	for _, sql := range []string{
		`INSERT INTO versions (path, version, namespace, digest, size, files, manifest, published_by) VALUES ('nowhere/x', 1, 'nowhere', 'sha256:00', 0, 0, '{}', 't')`,
		`INSERT INTO skills (path, namespace, current, digest) VALUES ('nowhere/x', 'nowhere', NULL, '')`,
		`INSERT INTO skills (path, namespace, current, digest) VALUES ('acme/x', 'acme', 1, 'sha256:00')`,
		`UPDATE skills SET current = 7 WHERE path = 'acme/code-review'`,
		`UPDATE skills SET digest = 'sha256:00' WHERE path = 'acme/code-review'`,
		`UPDATE skills SET current = NULL WHERE path = 'acme/code-review'`,
		`DELETE FROM versions WHERE path = 'acme/code-review'`,
		`UPDATE versions SET digest = 'sha256:00' WHERE path = 'acme/code-review'`,
		`DELETE FROM namespaces`,
		`TRUNCATE versions CASCADE`,
		`UPDATE namespaces SET prefix = 'other'`,
	} {
		if _, err := conn.Exec(ctx, sql); err == nil {
			t.Errorf("%s: accepted", sql)
		}
	}
	// What the registry itself does still passes.
	if _, err := conn.Exec(ctx, `UPDATE skills SET current = NULL, digest = '' WHERE path = 'acme/code-review'`); err != nil {
		t.Errorf("removing a skill: %v", err)
	}
	if err := registry.Rollback(ctx, conn, "acme/code-review", 1, "t"); err != nil {
		t.Errorf("rolling back: %v", err)
	}
}

// TestMigrateDigests: a registry created before skills recorded their
// current digest gets it filled in by the migration.
func TestMigrateDigests(t *testing.T) {
	conn := connect(t, newDB(t))
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `CREATE TABLE skillport_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"0001_init.sql", "0002_skill_generation.sql"} {
		sql, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(sql)); err != nil {
			t.Fatal(err)
		}
		conn.Exec(ctx, `INSERT INTO skillport_migrations (version, name) VALUES ($1, $2)`, i+1, name)
	}
	for _, sql := range []string{
		`INSERT INTO namespaces (prefix, created_by) VALUES ('acme', 't')`,
		`INSERT INTO versions (path, version, namespace, digest, size, files, manifest, published_by) VALUES ('acme/x', 1, 'acme', 'sha256:01', 0, 0, '{}', 't'), ('acme/x', 2, 'acme', 'sha256:02', 0, 0, '{}', 't')`,
		`INSERT INTO skills (path, namespace, current) VALUES ('acme/x', 'acme', 1)`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if applied, err := registry.Migrate(ctx, conn); err != nil || len(applied) == 0 {
		t.Fatalf("migrating a version 2 registry: %v %v", applied, err)
	}
	var d string
	if err := conn.QueryRow(ctx, `SELECT digest FROM skills WHERE path = 'acme/x'`).Scan(&d); err != nil || d != "sha256:01" {
		t.Errorf("digest after the migration: %q %v, want sha256:01 (version 1's)", d, err)
	}
}

// TestPublishContentPaths: new content up to 1,000 files travels with the
// metadata, more is streamed with COPY; either way every new file is
// stored, content already stored is not stored again, and the replica
// serves what was published.
func TestPublishContentPaths(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1001, 1002} { // files; one of them already stored
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dsn := newDB(t)
			conn := connect(t, dsn)
			fsys := fstest.MapFS{}
			for i := range n - 3 {
				fsys[fmt.Sprintf("s%d/f%03d.txt", i%3, i)] = &fstest.MapFile{Data: fmt.Appendf(nil, "file %d of %d\n", i, n)}
			}
			for i := range 3 {
				fsys[fmt.Sprintf("s%d/SKILL.md", i)] = &fstest.MapFile{Data: fmt.Appendf(nil, "---\nname: s%d\ndescription: Skill %d.\n---\n", i, i)}
			}
			cat, err := catalog.Open(fsys, &catalog.Options{Logger: discard})
			if err != nil {
				t.Fatal(err)
			}
			// One file is already stored, by another publish.
			one := cat.File("skill://s0/SKILL.md")
			data, _ := cat.ReadFile(one)
			if _, err := registry.Migrate(ctx, conn); err != nil {
				t.Fatal(err)
			}
			conn.Exec(ctx, `INSERT INTO blobs VALUES ($1, $2, $3)`, one.Digest, one.Size, data)
			res := publish(t, conn, cat, nil)
			if res.BlobsStored != n-1 || len(res.Added) != 3 {
				t.Fatalf("%d files: %d stored, %d skills added; want %d and 3", n, res.BlobsStored, len(res.Added), n-1)
			}
			sameContent(t, cat, openReplica(t, dsn).Snapshot())
		})
	}
}
