package access_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/internal/gittest"
	"github.com/skillport/skillport/internal/pgtest"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/skillserver"
)

// TestCursorBoundToCallerSources: cursors are bound to the caller with the
// git and registry sources too, across replicas sharing the cursor key
// (as --stateless replicas sharing SKILLPORT_CURSOR_KEY are).
func TestCursorBoundToCallerSources(t *testing.T) {
	opts := skillserver.Options{PageSize: 1, CursorKey: cursorKey}
	discard := slog.New(slog.DiscardHandler)
	t.Run("git", func(t *testing.T) {
		spec, err := gitsource.ParseSpec("git+file://" + gittest.BareRepoOf(t, testTree(t)) + "@main")
		if err != nil {
			t.Fatal(err)
		}
		gs, err := gitsource.Open(context.Background(), spec, &gitsource.Options{CacheDir: t.TempDir(), Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		cursorBound(t, serveAuthorized(t, published.NewCatalogSource(gs.Catalog()), 2, opts))
	})
	t.Run("registry", func(t *testing.T) {
		pg, err := pgtest.Start(t.TempDir())
		if err != nil {
			t.Fatalf("the registry source needs PostgreSQL and it could not start: %v", err)
		}
		t.Cleanup(func() { pg.Stop() })
		dsn, err := pg.NewDatabase("skills")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		conn, err := registry.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := registry.Migrate(ctx, conn); err != nil {
			t.Fatal(err)
		}
		cat, err := catalog.OpenDir(testTree(t), &catalog.Options{Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := registry.Publish(ctx, conn, cat, &registry.PublishOptions{Publisher: "test"}); err != nil {
			t.Fatal(err)
		}
		// Two replicas, each its own registry source, as two processes.
		var urls []string
		for range 2 {
			src, err := registry.Open(ctx, dsn, &registry.Options{Logger: discard})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { src.Close() })
			urls = append(urls, serveAuthorized(t, src, 1, opts)...)
		}
		cursorBound(t, urls)
	})
}
