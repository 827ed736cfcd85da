package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/skillport/skillport/internal/sigfile"
)

// Defaults for [WatchOptions].
const (
	DefaultDebounce = 150 * time.Millisecond
	DefaultMaxDelay = 2 * time.Second
)

// ErrNotWatchable is returned by [Watch] for a catalog that was not opened
// from a directory.
var ErrNotWatchable = errors.New("catalog was not opened from a directory")

// WatchOptions configure [Watch]. The zero value is usable.
type WatchOptions struct {
	// Debounce is how long the tree must stay quiet after a change before
	// the catalog is rebuilt; zero means DefaultDebounce.
	Debounce time.Duration
	// MaxDelay bounds how long a stream of changes can postpone a rebuild;
	// zero means DefaultMaxDelay. A burst of writes therefore causes at most
	// one rebuild per MaxDelay, not one per write.
	MaxDelay time.Duration
	// Logger receives watch errors; nil means the catalog's logger, or slog.Default().
	Logger *slog.Logger
	// Started, if set, is called once, when every directory is watched and
	// the tree has been checked for changes made before: installing the
	// watches walks the whole tree, and a server may give the memory that
	// walk used back to the system then (the first rebuild, if one is
	// needed, follows).
	Started func()
}

// Watch follows the directory c was opened from with [OpenDir] until ctx is
// done. Every directory of the tree is watched; after a change (debounced)
// the catalog is rebuilt with [Catalog.Reload], which re-hashes only changed
// files, and fn receives each new snapshot whose [Catalog.ID] differs from
// the last one handed over. fn is called from one goroutine, never
// concurrently. A change made after c's build began and before the watches
// were in place is picked up right after Watch starts; when the change
// times of the tree show none, the tree is not rebuilt until an event.
// Watch returns nil when ctx ends, or an error if the directory cannot be
// watched at all.
func Watch(ctx context.Context, c *Catalog, opts *WatchOptions, fn func(*Catalog)) error {
	if c == nil || fn == nil {
		return errors.New("catalog: Watch needs a catalog and a callback")
	}
	dir := c.SourceDir()
	if dir == "" {
		return fmt.Errorf("catalog: cannot watch: %w", ErrNotWatchable)
	}
	o := WatchOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	log := o.Logger
	if log == nil {
		log = c.opts.Logger
	}
	if log == nil {
		log = slog.Default()
	}

	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("catalog: watching %s: %w", dir, err)
	}
	defer w.Close()
	// Whatever changed between the start of c's build and the watch raised
	// no event. Installing the watches visits every directory anyway: it
	// also looks at every entry's change time, and only when one is recent
	// enough to have been missed is the tree rebuilt right away. A full
	// rebuild of a large tree holds two catalogs for seconds; skipping it
	// when nothing changed keeps serve's memory at what the first build needs.
	wt := &watchTree{w: w, log: log, dotfiles: c.opts.IncludeDotFiles, root: dir,
		since: c.built.Add(-c.stats.Duration - changeSlack)}
	listings, _ := c.src.loadListings()
	if err := wt.addListed(dir, listings); err != nil {
		return fmt.Errorf("catalog: watching %s: %w", dir, err)
	}
	wt.addSignatures()
	rescan := wt.changed != "" || c.src.hasDirty()
	if rescan {
		log.Debug("checking the tree once: it may have changed before the watch began", "dir", dir, "path", wt.changed)
	}
	wt.since = time.Time{} // directories created later are rebuilt anyway
	if o.Started != nil {
		o.Started()
	}

	cur := c
	var execs execIndex
	var (
		quiet    *time.Timer // fires Debounce after the last event
		deadline *time.Timer // fires MaxDelay after the first pending event
		pending  bool
	)
	stop := func(t *time.Timer) {
		if t != nil {
			t.Stop()
		}
	}
	defer func() { stop(quiet); stop(deadline) }()
	fire := make(chan struct{}, 1)
	signal := func() {
		select {
		case fire <- struct{}{}:
		default:
		}
	}
	if rescan {
		pending = true
		signal()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Create) {
				// A new directory must be watched before files appear in it;
				// the rebuild picks up whatever was written before the watch.
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					if err := wt.addTree(ev.Name); err != nil {
						log.Warn("cannot watch new directory; changes inside it are picked up at the next rebuild", "dir", ev.Name, "err", err)
					}
				}
			}
			if ev.Has(fsnotify.Chmod) && !ev.Has(fsnotify.Write) && !execs.flipped(cur, dir, ev.Name) {
				continue // metadata only (times, owner, other permission bits)
			}
			if !pending {
				pending = true
				deadline = time.AfterFunc(o.MaxDelay, signal)
			}
			if quiet == nil {
				quiet = time.AfterFunc(o.Debounce, signal)
			} else {
				quiet.Reset(o.Debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// Overflow means events were lost: rebuild anyway.
			log.Warn("file watch error; rebuilding the catalog", "dir", dir, "err", err)
			if !pending {
				pending = true
				deadline = time.AfterFunc(o.MaxDelay, signal)
			}
			signal()
		case <-fire:
			if !pending {
				continue
			}
			pending = false
			stop(quiet)
			stop(deadline)
			quiet, deadline = nil, nil
			next, err := cur.Reload()
			if err != nil {
				log.Error("cannot rebuild the catalog; still serving the previous snapshot", "dir", dir, "err", err)
				continue
			}
			if next.ID() == cur.ID() {
				cur = next
				continue
			}
			cur = next
			fn(next)
		}
	}
}

// execIndex is what one snapshot recorded of its files' execute bits, by
// tree path, built on the first permission change seen while it is
// served. Indexers and backup tools change attributes in storms (fsnotify
// advises ignoring Chmod), so such an event rebuilds the catalog only
// when it flips the execute bit of a published file ([File.Mode]), which
// changes the web catalog's archives.
type execIndex struct {
	of   *Catalog
	exec map[string]bool
}

// flipped reports whether the file at name (an event's path under dir) is
// published by cur with the other execute bit than it has now.
func (x *execIndex) flipped(cur *Catalog, dir, name string) bool {
	fi, err := os.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	rel, err := filepath.Rel(dir, name)
	if err != nil || !filepath.IsLocal(rel) {
		return false
	}
	if x.of != cur {
		x.of, x.exec = cur, make(map[string]bool, len(cur.files))
		for _, f := range cur.files {
			if f.Mode != 0 {
				x.exec[f.Path] = f.Mode&0o111 != 0
			}
		}
	}
	was, ok := x.exec[filepath.ToSlash(rel)]
	return ok && was != (fi.Mode().Perm()&0o111 != 0)
}

// changeSlack widens the window in which a change counts as possibly
// missed by Watch: change times come from the kernel's coarse clock, which
// lags the one time.Now reads by up to a tick, and some file systems keep
// them to the second or two.
var changeSlack = 3 * time.Second

// watchTree adds fsnotify watches on a directory and all its subdirectories.
// While since is set, it also records in changed the first entry whose
// change time is not before since (or cannot be known), and any symbolic
// link whose target the walk does not itself check.
type watchTree struct {
	w        *fsnotify.Watcher
	log      *slog.Logger
	dotfiles bool
	root     string
	realRoot string // root with links resolved, once a link needs it
	since    time.Time
	changed  string
	st       statBuf
}

// note checks the change time of p, which must be called after the watch
// on its directory was added: a later change raises an event, an earlier
// one shows in the change time.
func (wt *watchTree) note(p string) {
	if wt.since.IsZero() || wt.changed != "" {
		return
	}
	if ct, err := lchangeTime(p, &wt.st); err != nil || !ct.Before(wt.since) {
		wt.changed = p
	}
}

// noteLink checks a symbolic link: the catalog may read its target, which
// the walk checks only when it lies in the tree outside dot-directories.
// A target outside the tree is never read, whatever it holds.
func (wt *watchTree) noteLink(p string) {
	if wt.since.IsZero() || wt.changed != "" {
		return
	}
	wt.note(p)
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		wt.changed = p // dangling: its target may appear anywhere
		return
	}
	if wt.realRoot == "" {
		if wt.realRoot, err = filepath.EvalSymlinks(wt.root); err != nil {
			wt.changed = p
			return
		}
	}
	rel, err := filepath.Rel(wt.realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return
	}
	if !wt.dotfiles && rel != "." {
		for _, seg := range strings.Split(rel, string(filepath.Separator)) {
			if strings.HasPrefix(seg, ".") {
				wt.changed = p
				return
			}
		}
	}
}

// addListed adds the watches of directory p and everything below it like
// addTree, but takes the entries of each directory whose listing the
// catalog's last walk kept, and whose stamp, read after its watch was
// added, is still that listing's: no entry was added, removed or renamed
// since, so the listing is what reading it now would give. Reading every
// directory again made 90 MB of garbage on the 21,066-skill real-world
// tree, allocated among the watches that stay; this takes a path per
// entry. A directory whose listing does not hold is walked by addTree.
func (wt *watchTree) addListed(p string, listings map[dirKey]*listing) error {
	if len(listings) == 0 {
		return wt.addTree(p)
	}
	if err := wt.w.Add(p); err != nil {
		if p == wt.root {
			return err
		}
		wt.log.Warn("cannot watch directory; its changes are picked up with the next rebuild", "dir", p, "err", err)
		wt.changed = p
		return nil
	}
	ct, err := lchangeTime(p, &wt.st)
	if err != nil {
		return wt.addTree(p)
	}
	if !wt.since.IsZero() && wt.changed == "" && !ct.Before(wt.since) {
		wt.changed = p
	}
	stamp, ok := dirStampOf(&wt.st)
	l := listings[stamp.key()]
	if !ok || l == nil || l.stamp != stamp {
		return wt.addTree(p)
	}
	// The paths of the subdirectories stay with their watches: one string
	// for all of them, not one each among the files' paths.
	var dirs stringPack
	for i := range l.len() {
		if name := l.name(i); l.typ(i).IsDir() && (wt.dotfiles || !strings.HasPrefix(name, ".")) {
			dirs.add(p + string(filepath.Separator) + name)
		}
	}
	all, k := dirs.done(), 0
	for i := range l.len() {
		name := l.name(i)
		if !wt.dotfiles && strings.HasPrefix(name, ".") {
			continue
		}
		switch typ := l.typ(i); {
		case typ&fs.ModeSymlink != 0:
			wt.addLink(p + string(filepath.Separator) + name)
		case typ.IsDir():
			k++
			if err := wt.addListed(dirs.get(all, k-1), listings); err != nil {
				return err
			}
		default:
			wt.note(p + string(filepath.Separator) + name)
		}
	}
	return nil
}

// addLink watches the target of a link to a directory, which the catalog
// follows once, and checks the link.
func (wt *watchTree) addLink(p string) {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		if err := wt.w.Add(p); err != nil {
			wt.log.Warn("cannot watch linked directory", "dir", p, "err", err)
		}
	}
	wt.noteLink(p)
}

func (wt *watchTree) addTree(root string) error {
	first := true
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		isRoot := first
		first = false
		if err != nil {
			if isRoot {
				return err
			}
			if !wt.since.IsZero() {
				wt.changed = p
			}
			return nil // vanished or unreadable: the rebuild reports it
		}
		if !isRoot && !wt.dotfiles && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// The catalog follows links to directories inside the tree once;
			// watch their targets too.
			wt.addLink(p)
			return nil
		}
		if !d.IsDir() {
			// Its directory's listing is read after the directory's watch
			// was added.
			wt.note(p)
			return nil
		}
		if err := wt.w.Add(p); err != nil {
			if isRoot {
				return err
			}
			wt.log.Warn("cannot watch directory; its changes are picked up with the next rebuild", "dir", p, "err", err)
			wt.changed = p
		}
		wt.note(p) // after the watch: entries added before it show here
		return nil
	})
}

// addSignatures watches the folder of the skills' signature bundles
// (docs/signing.md), which the walk skips with every dot-folder: a new or
// changed bundle is a new snapshot, carried to clients by the source's
// change notification without a restart. A .skillport folder created
// later is seen by the root's watch, and its Create adds it.
func (wt *watchTree) addSignatures() {
	if wt.dotfiles {
		return // already in the tree
	}
	top := filepath.Join(wt.root, filepath.FromSlash(sigfile.Dir[:strings.IndexByte(sigfile.Dir, '/')]))
	if fi, err := os.Stat(top); err != nil || !fi.IsDir() {
		return
	}
	if err := wt.addTree(top); err != nil {
		wt.log.Warn("cannot watch the signature folder; new bundles are picked up with the next rebuild", "dir", top, "err", err)
	}
}
