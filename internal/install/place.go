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

// abandoned is how old a staging folder without a readable marker (its
// owner died between making it and writing the marker), or one whose
// owner cannot be asked through a lock (no flock on this system), must
// be before [Sweep] takes it for abandoned.
const (
	abandonedUnmarked = time.Minute
	abandonedUnlocked = time.Hour
)

// Staging is a staging folder in use: its marker's lock is held until
// Close, so no other process's [Sweep] removes it meanwhile.
type Staging struct {
	// Dir is the staging folder.
	Dir    string
	marker *os.File
}

// NewStaging makes a staging folder in parent (created if need be), named
// with prefix ([StagePrefix] or [PullPrefix]), and marks it as in use.
func NewStaging(parent, prefix string) (*Staging, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, err
	}
	st := &Staging{Dir: dir}
	err = os.Chmod(dir, 0o755)
	if err == nil {
		st.marker, err = os.OpenFile(filepath.Join(dir, StageMarker), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err == nil {
		err = holdMarker(st.marker)
	}
	if err == nil {
		_, err = io.WriteString(st.marker, markerText)
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// Close removes the staging folder with whatever is still in it, and
// releases the marker's lock.
func (s *Staging) Close() error {
	err := os.RemoveAll(s.Dir)
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
// RENAME_EXCHANGE), after which the old folder is at src and is removed.
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
// lock no living process holds. A skill folder it had moved aside is put
// back first when nothing took its place. Anything else is left alone:
// another name, a marker that is a link or says something else, a
// staging folder in use. Nothing is followed through a link.
func Sweep(parent string) (Swept, error) {
	var out Swept
	stale, err := staleStagings(parent)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, st := range stale {
		back, err := putBack(parent, st)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if back != "" {
			out.Restored = append(out.Restored, back)
		}
		if err := os.RemoveAll(st); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", st, err))
			continue
		}
		out.Removed = append(out.Removed, st)
	}
	return out, errors.Join(errs...)
}

// Abandoned lists, without changing anything, the staging folders in the
// skills folder parent that [Sweep] would remove.
func Abandoned(parent string) ([]string, error) {
	return staleStagings(parent)
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

// staleStagings lists parent's abandoned staging folders. Each one's
// marker lock is taken only for the look (released on return), so that a
// staging folder made meanwhile is never listed: its owner locks it before
// writing the marker's text.
func staleStagings(parent string) ([]string, error) {
	ents, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	now := time.Now()
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || !(strings.HasPrefix(name, StagePrefix) || strings.HasPrefix(name, PullPrefix)) {
			continue
		}
		st := filepath.Join(parent, name)
		if abandonedStaging(st, now) {
			out = append(out, st)
		}
	}
	return out, nil
}

// abandonedStaging reports whether the folder st (named as a staging
// folder) is one skillport made and no living process uses.
func abandonedStaging(st string, now time.Time) bool {
	marker := filepath.Join(st, StageMarker)
	fi, err := os.Lstat(marker)
	if errors.Is(err, fs.ErrNotExist) {
		// Made, then killed before its marker existed: only an empty
		// folder, and only once no owner can still be about to mark it.
		ents, err := os.ReadDir(st)
		sfi, serr := os.Lstat(st)
		return err == nil && len(ents) == 0 && serr == nil && now.Sub(sfi.ModTime()) > abandonedUnmarked
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > int64(len(markerText)) {
		return false
	}
	f, err := os.Open(marker)
	if err != nil {
		return false
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return false // swapped for something else since the Lstat
	}
	held, canLock := tryMarker(f)
	if held {
		return false
	}
	if !canLock && now.Sub(fi.ModTime()) <= abandonedUnlocked {
		return false
	}
	text, err := io.ReadAll(io.LimitReader(f, int64(len(markerText))+1))
	if err != nil {
		return false
	}
	if len(text) == 0 {
		// Killed between creating the marker and writing it.
		return now.Sub(fi.ModTime()) > abandonedUnmarked
	}
	return bytes.Equal(text, []byte(markerText))
}
