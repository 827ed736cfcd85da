//go:build unix

package catalog

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/skillport/skillport/internal/skilltest"
)

// modeTree is a skill whose modes contradict the "#!" rule: a script
// without "#!" that is executable, and a file starting with "#!" that is not.
var modeTree = map[string]string{
	"tool/SKILL.md":    "---\nname: tool\ndescription: A tool.\n---\n",
	"tool/scripts/run": "echo no shebang\n",
	"tool/notes.sh":    "#!/bin/sh\necho an example, not to run\n",
}

// TestFileModeRecorded (Unix: Windows has no execute bit, and a directory
// there records no mode): a directory's execute bits are recorded in
// File.Mode (0755 or 0644, whatever the umask), a tree without modes
// records 0, and flipping an execute bit changes the ID; a tree without
// executable files keeps the ID it had before modes were recorded.
func TestFileModeRecorded(t *testing.T) {
	dir := skilltest.WriteTree(t, modeTree)
	run := filepath.Join(dir, "tool", "scripts", "run")
	if err := os.Chmod(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "tool", "notes.sh"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := OpenDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := map[string]fs.FileMode{"skill://tool/SKILL.md": 0o644, "skill://tool/scripts/run": 0o755, "skill://tool/notes.sh": 0o644}
	for uri, m := range want {
		if f := c.File(uri); f == nil || f.Mode != m {
			t.Errorf("%s: %+v, want mode %o", uri, f, m)
		}
	}

	mapfs := fstest.MapFS{}
	for p, s := range modeTree {
		mapfs[p] = &fstest.MapFile{Data: []byte(s)}
	}
	m, err := Open(mapfs, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for uri := range want {
		if f := m.File(uri); f == nil || f.Mode != 0 {
			t.Errorf("fstest.MapFS without modes: %s: %+v, want mode 0 (unknown)", uri, f)
		}
	}
	mapfs["tool/scripts/run"].Mode = 0o755
	if m, err = Open(mapfs, &Options{Logger: quiet}); err != nil {
		t.Fatal(err)
	} else if f := m.File("skill://tool/scripts/run"); f.Mode != 0o755 {
		t.Errorf("fstest.MapFS with 0755: mode %o", f.Mode)
	}
	if m.ID() != c.ID() {
		t.Errorf("the same files and executable bits, IDs %s and %s", m.ID(), c.ID())
	}

	// chmod -x: the ID is that of a tree that records no modes.
	if err := os.Chmod(run, 0o644); err != nil {
		t.Fatal(err)
	}
	plain, err := c.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if f := plain.File("skill://tool/scripts/run"); f.Mode != 0o644 {
		t.Errorf("after chmod -x: mode %o", f.Mode)
	}
	delete(mapfs, "tool/scripts/run")
	mapfs["tool/scripts/run"] = &fstest.MapFile{Data: []byte(modeTree["tool/scripts/run"])}
	if m, _ = Open(mapfs, &Options{Logger: quiet}); plain.ID() != m.ID() || plain.ID() == c.ID() {
		t.Errorf("IDs: executable %s, not %s, without modes %s; want the last two equal, the first different", c.ID(), plain.ID(), m.ID())
	}
	// The ID of a snapshot built of files (published.NewSnapshot) likewise.
	f := *plain.File("skill://tool/scripts/run")
	id := func(mode fs.FileMode) string { f.Mode = mode; return ContentID(nil, []*File{&f}) }
	if id(0) != id(0o644) || id(0o644) == id(0o755) {
		t.Errorf("ContentID by mode: unknown %s, 0644 %s, 0755 %s; want the first two equal, the last different", id(0), id(0o644), id(0o755))
	}
}

// TestWatchSeesExecuteBit: chmod +x alone is a change a watched catalog
// picks up, though other attribute changes (fsnotify's Chmod events) are
// ignored. The tree is older than the build, so Watch does not check it
// again when it starts (that check would pick the mode up by itself).
func TestWatchSeesExecuteBit(t *testing.T) {
	old := changeSlack
	changeSlack = 50 * time.Millisecond
	t.Cleanup(func() { changeSlack = old })
	dir := skilltest.WriteTree(t, modeTree)
	time.Sleep(3 * changeSlack) // ages the tree's change times; nothing is asserted about this wait
	c, err := OpenDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rescan := &countHandler{match: "checking the tree once"}
	started, snaps, done := make(chan struct{}), make(chan *Catalog, 8), make(chan error, 1)
	go func() {
		done <- Watch(ctx, c, &WatchOptions{Debounce: 10 * time.Millisecond, Logger: slog.New(rescan), Started: func() { close(started) }},
			func(n *Catalog) { snaps <- n })
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Watch returned %v before Started", err)
	case <-time.After(time.Minute):
		t.Fatal("Watch did not call Started within a minute")
	}
	if rescan.count() > 0 {
		t.Fatal("Watch checks the tree again at start, which would hide whether it sees the chmod")
	}
	if err := os.Chmod(filepath.Join(dir, "tool", "notes.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	for deadline := time.After(10 * time.Second); ; {
		select {
		case n := <-snaps:
			if n.File("skill://tool/notes.sh").Mode == 0o755 {
				return
			}
		case <-deadline:
			t.Fatal("chmod +x of a published file: no new snapshot within 10s")
		}
	}
}
