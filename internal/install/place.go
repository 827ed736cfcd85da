package install

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillport/skillport/internal/filemode"
)

// Staging folders. Every skill folder install or pull writes is first
// built complete inside a staging folder beside its target, a dot folder
// agents skip, and then placed in one step ([Place]). A process killed
// meanwhile leaves the staging folder behind; [Sweep] recognises it by its
// name and by the marker file inside, whose lock its living owner holds,
// and removes it.
const (
	// StagePrefix starts the names of install's staging folders.
	StagePrefix = ".skillport-install-"
	// PullPrefix starts the names of the staging folders of
	// host.Materialize, which pull and install share.
	PullPrefix = ".skillport-pull-"
	// StageMarker is the marker file inside every staging folder.
	StageMarker = ".skillport-staging"
	// asideName is the folder inside a staging folder that holds a skill
	// folder moved aside by [Place], under its own name, until its
	// replacement is in place.
	asideName = "aside"
)

// markerText is the marker's whole content, written after its lock is
// taken: a marker that says anything else is not one skillport wrote.
const markerText = "skillport staging folder: a skill being written, or left by an interrupted install or pull; skillport install removes it\n"

// Without flock (not Unix), an owner cannot be asked whether it still
// uses its staging folder: one is taken for abandoned by age alone, a
// folder without its marker after abandonedUnmarked, a marked one after
// abandonedUnlocked.
const (
	abandonedUnmarked = time.Minute
	abandonedUnlocked = time.Hour
)

// errSwept says a staging folder was taken by another process's [Sweep]
// while being made; [NewStaging] makes another.
var errSwept = errors.New("staging folder swept while being made")

// Staging is a staging folder in use: its marker's lock is held until
// Close, so no other process's [Sweep] removes it meanwhile.
type Staging struct {
	// Dir is the staging folder.
	Dir    string
	marker *os.File
}

// NewStaging makes a staging folder in parent (created if need be), named
// with prefix ([StagePrefix] or [PullPrefix]), and marks it as in use: its
// marker is created, locked, checked to be still in place (a [Sweep] may
// have taken the folder before the lock), and only then given its text.
func NewStaging(parent, prefix string) (*Staging, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		dir, err := os.MkdirTemp(parent, prefix)
		if err != nil {
			return nil, err
		}
		st := &Staging{Dir: dir}
		err = st.mark()
		if err == nil {
			return st, nil
		}
		if errors.Is(err, errSwept) && attempt < 10 {
			// Another process is sweeping it (or only looking, as check
			// does): leave it, removed, and make another.
			if st.marker != nil {
				st.marker.Close()
			}
			os.RemoveAll(dir)
			continue
		}
		st.Close()
		return nil, err
	}
}

// mark creates, locks and writes the staging folder's marker.
func (s *Staging) mark() error {
	path := filepath.Join(s.Dir, StageMarker)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return sweptIfGone(err)
	}
	s.marker = f
	if err := holdMarker(f); err != nil {
		return err
	}
	held, err := f.Stat()
	if err != nil {
		return err
	}
	if linked, err := os.Lstat(path); err != nil || !os.SameFile(held, linked) {
		return errSwept
	}
	_, err = io.WriteString(f, markerText)
	return err
}

// sweptIfGone turns "no such file" while making a staging folder into
// errSwept: a sweeper removed it, still empty.
func sweptIfGone(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errSwept
	}
	return err
}

// Close removes the staging folder with whatever is still in it, and
// releases the marker's lock.
func (s *Staging) Close() error {
	if !canFlock && s.marker != nil {
		// Windows does not delete a file still open; without flock the
		// open marker guards nothing anyway.
		s.marker.Close()
		s.marker = nil
	}
	// Usually only the marker is left (the skill folder was placed): two
	// calls, not RemoveAll's walk.
	err := os.Remove(filepath.Join(s.Dir, StageMarker))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		err = os.Remove(s.Dir)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		err = os.RemoveAll(s.Dir)
	}
	if s.marker != nil {
		s.marker.Close()
	}
	return err
}

// Write writes one skill folder, name, inside the staging folder: the
// files at the slash paths rels with the contents data, as regular files
// created afresh (never through a link) with the mode internal/filemode
// gives them. It returns the folder written.
func (s *Staging) Write(name string, rels []string, data [][]byte) (string, error) {
	dir := filepath.Join(s.Dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	for i, rel := range rels {
		p := filepath.FromSlash(rel)
		if d := filepath.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return "", err
			}
		}
		w, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filemode.Mode(data[i]))
		if err != nil {
			return "", err
		}
		_, werr := w.Write(data[i])
		if err := errors.Join(werr, w.Close()); err != nil {
			return "", err
		}
		if i == 0 {
			testPause("write", s.Dir)
		}
	}
	return dir, nil
}

// Place makes the complete folder src the folder target, in one step that
// another process sees whole: with no target, a rename; over an existing
// target, an atomic exchange where the system has one (Linux renameat2
// RENAME_EXCHANGE, macOS renamex_np RENAME_SWAP), after which the old
// folder is at src and is removed.
// Elsewhere the old folder is first moved aside, into the staging folder
// holding src; a crash between the two renames leaves it there, and
// [Sweep] puts it back. src must be a folder directly inside a [Staging]
// folder made beside target.
func Place(src, target string) error {
	testPause("place", filepath.Dir(src))
	if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(src, target)
	}
	if err := exchange(src, target); err == nil {
		return os.RemoveAll(src)
	} else if !errors.Is(err, errNoExchange) {
		return err
	}
	aside := filepath.Join(filepath.Dir(src), asideName)
	if err := os.Mkdir(aside, 0o755); err != nil {
		return err
	}
	old := filepath.Join(aside, filepath.Base(target))
	if err := os.Rename(target, old); err != nil {
		return err
	}
	if err := os.Rename(src, target); err != nil {
		return errors.Join(err, os.Rename(old, target))
	}
	return os.RemoveAll(aside)
}

// Remove takes target away in one step (renamed into a staging folder,
// then deleted), so an agent never reads half a skill.
func Remove(target string) error {
	st, err := NewStaging(filepath.Dir(target), StagePrefix)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := os.Rename(target, filepath.Join(st.Dir, "gone")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Swept is what [Sweep] did in one skills folder.
type Swept struct {
	// Removed are the abandoned staging folders removed.
	Removed []string
	// Restored are the skill folders put back: moved aside by a [Place]
	// whose replacement never landed.
	Restored []string
}

// Sweep removes from the skills folder parent every staging folder an
// interrupted install or pull left: a real folder (never a link) named
// with [StagePrefix] or [PullPrefix] that holds skillport's marker, whose
// lock no living process holds (or, still empty, no marker yet: its maker
// died, or will make another). A skill folder it had moved aside is put
// back first when nothing took its place. Anything else is left alone:
// another name, a marker that is a link or says something else, a
// staging folder in use. Nothing is followed through a link. The marker's
// lock is held until the folder is gone, so no process starts using a
// folder being removed.
func Sweep(parent string) (Swept, error) {
	var out Swept
	stale, err := staleStagings(parent)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, st := range stale {
		err := st.remove(parent, &out)
		st.release()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// Abandoned lists, without changing anything, the staging folders in the
// skills folder parent that [Sweep] would remove.
func Abandoned(parent string) ([]string, error) {
	stale, err := staleStagings(parent)
	var out []string
	for _, st := range stale {
		st.release()
		out = append(out, st.dir)
	}
	return out, err
}

// staleStaging is an abandoned staging folder, its marker (if any) open
// and locked by the sweeper.
type staleStaging struct {
	dir    string
	marker *os.File
}

func (st staleStaging) release() {
	if st.marker != nil {
		st.marker.Close()
	}
}

// remove puts back what st holds aside and removes it; a folder without
// a marker is removed only while empty (its maker may be about to mark it,
// and then makes another when it finds it gone).
func (st staleStaging) remove(parent string, out *Swept) error {
	if st.marker == nil {
		if err := os.Remove(st.dir); err == nil {
			out.Removed = append(out.Removed, st.dir)
		}
		return nil
	}
	back, err := putBack(parent, st.dir)
	if err != nil {
		return err
	}
	if back != "" {
		out.Restored = append(out.Restored, back)
	}
	if err := os.RemoveAll(st.dir); err != nil {
		return fmt.Errorf("removing %s: %w", st.dir, err)
	}
	out.Removed = append(out.Removed, st.dir)
	return nil
}

// putBack moves the skill folder held aside in the staging folder st back
// to parent when parent has no folder of its name. It returns the folder
// put back, if any.
func putBack(parent, st string) (string, error) {
	aside := filepath.Join(st, asideName)
	if fi, err := os.Lstat(aside); err != nil || !fi.IsDir() {
		return "", nil
	}
	inner, err := os.ReadDir(aside)
	if err != nil || len(inner) != 1 || !inner[0].IsDir() {
		return "", err
	}
	target := filepath.Join(parent, inner[0].Name())
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err := os.Rename(filepath.Join(aside, inner[0].Name()), target); err != nil {
		return "", err
	}
	return target, nil
}

// staleStagings lists parent's abandoned staging folders, each marked one
// with its marker's lock taken; release them when done.
func staleStagings(parent string) ([]staleStaging, error) {
	ents, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []staleStaging
	now := time.Now()
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || !(strings.HasPrefix(name, StagePrefix) || strings.HasPrefix(name, PullPrefix)) {
			continue
		}
		dir := filepath.Join(parent, name)
		if st, ok := abandonedStaging(dir, now); ok {
			out = append(out, st)
		}
	}
	return out, nil
}

// abandonedStaging reports whether the folder dir (named as a staging
// folder) is one skillport made and no living process uses; if so, its
// marker stays open and locked in the result.
func abandonedStaging(dir string, now time.Time) (staleStaging, bool) {
	marker := filepath.Join(dir, StageMarker)
	fi, err := os.Lstat(marker)
	if errors.Is(err, fs.ErrNotExist) {
		// Made, and its maker killed (or not yet done) before the marker:
		// only an empty folder, and without flock only an old one.
		ents, err := os.ReadDir(dir)
		dfi, derr := os.Lstat(dir)
		ok := err == nil && len(ents) == 0 && derr == nil && (canFlock || now.Sub(dfi.ModTime()) > abandonedUnmarked)
		return staleStaging{dir: dir}, ok
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > int64(len(markerText)) {
		return staleStaging{}, false
	}
	f, err := os.Open(marker)
	if err != nil {
		return staleStaging{}, false
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return staleStaging{}, false // swapped for something else since the Lstat
	}
	if !tryMarker(f) {
		return staleStaging{}, false // its owner is alive
	}
	if !canFlock && now.Sub(fi.ModTime()) <= abandonedUnlocked {
		return staleStaging{}, false
	}
	text, err := io.ReadAll(io.LimitReader(f, int64(len(markerText))+1))
	if err != nil {
		return staleStaging{}, false
	}
	// An empty marker: its maker died between creating and writing it
	// (one still alive would have failed to lock it, or finds it gone).
	if len(text) != 0 && !bytes.Equal(text, []byte(markerText)) {
		return staleStaging{}, false
	}
	if len(text) == 0 && !canFlock && now.Sub(fi.ModTime()) <= abandonedUnmarked {
		return staleStaging{}, false
	}
	keep = true
	return staleStaging{dir: dir, marker: f}, true
}
