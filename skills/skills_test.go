package skills_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/skilltest"
	"github.com/skillport/skillport/skills"
	"github.com/skillport/skillport/skillserver"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestAddDirectoryWatchFollowsTheFolder(t *testing.T) {
	dir := t.TempDir()
	skilltest.WriteFile(t, filepath.Join(dir, "a", "SKILL.md"), "---\nname: a\ndescription: A.\n---\n")
	s := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	sv, err := skills.AddDirectory(s, dir, &skills.Options{Watch: true,
		WatchOptions: catalog.WatchOptions{Debounce: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond},
		Server:       skillserver.Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	changed := make(chan struct{}, 1)
	cancel := skills.OnChange(sv, func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer cancel()
	skilltest.WriteFile(t, filepath.Join(dir, "b", "SKILL.md"), "---\nname: b\ndescription: B.\n---\n")
	deadline := time.After(10 * time.Second)
	for len(sv.Catalog().Skills()) != 2 {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the new skill was not served within 10s; serving %d skills", len(sv.Catalog().Skills()))
		}
	}
}

func TestAddDirectoryWithoutWatchStaysPut(t *testing.T) {
	dir := t.TempDir()
	skilltest.WriteFile(t, filepath.Join(dir, "a", "SKILL.md"), "---\nname: a\ndescription: A.\n---\n")
	sv, err := skills.AddDirectory(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), dir, &skills.Options{Server: skillserver.Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	// A watched twin of the same folder is the witness: the unwatched one
	// is judged once the watched one has seen the change, not after a
	// fixed sleep.
	watched, err := skills.AddDirectory(mcp.NewServer(&mcp.Implementation{Name: "w"}, nil), dir, &skills.Options{Watch: true, Server: skillserver.Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer watched.Close()
	skilltest.WriteFile(t, filepath.Join(dir, "b", "SKILL.md"), "---\nname: b\ndescription: B.\n---\n")
	deadline := time.Now().Add(20 * time.Second)
	for len(watched.Catalog().Skills()) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the watched twin did not see the new skill within 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(sv.Catalog().Skills()); n != 1 {
		t.Fatalf("without Watch the catalog changed by itself: %d skills", n)
	}
}

func TestAddFSRefusesWatch(t *testing.T) {
	_, err := skills.AddFS(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), fstest.MapFS{}, &skills.Options{Watch: true})
	if !errors.Is(err, catalog.ErrNotWatchable) {
		t.Fatalf("AddFS with Watch: got %v, want ErrNotWatchable", err)
	}
}

func TestAddDirectoryErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := skills.AddDirectory(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), missing, nil); err == nil {
		t.Fatal("AddDirectory of a missing folder succeeded")
	}
	if _, err := skills.AddDirectory(nil, "testdata/skills", nil); err == nil {
		t.Fatal("AddDirectory on a nil server succeeded")
	}
	if _, err := skills.AddDirectory(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), "testdata/skills", &skills.Options{Server: skillserver.Options{CacheScope: "everyone"}}); err == nil {
		t.Fatal("AddDirectory with an invalid CacheScope succeeded")
	}
	if err := skills.Serve(context.Background(), missing, nil, nil); err == nil {
		t.Fatal("Serve of a missing folder succeeded")
	}
}

// Close releases the folder: reads through the catalog fail afterwards,
// and a second Close is harmless.
func TestServedCloseReleasesTheFolder(t *testing.T) {
	sv, err := skills.AddDirectory(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), "testdata/skills", &skills.Options{Watch: true, Server: skillserver.Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	cat := sv.Catalog()
	f := cat.File("skill://pdf/SKILL.md")
	if _, err := cat.ReadFile(f); err != nil {
		t.Fatal(err)
	}
	if err := sv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.ReadFile(f); err == nil {
		t.Fatal("ReadFile succeeded after Close")
	}
	if err := sv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
