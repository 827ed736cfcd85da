package install

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// StagePrefix starts the name of the staging folders Place works in,
// beside the target; a dot folder, which agents do not read as a skill.
const StagePrefix = ".skillport-install-"

// Stage makes a staging folder in parent (created if need be), for a
// skill to be written into and then placed with [Place].
func Stage(parent string) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(parent, StagePrefix)
}

// Place makes the complete folder src the folder target, in one step that
// another process sees whole: with no target, a rename; over an existing
// target, an atomic exchange where the system has one (Linux renameat2
// RENAME_EXCHANGE), after which the old folder is at src and is removed.
// Elsewhere the old folder is first moved aside, into a staging folder
// named like src's with ".old" added; a crash between the two renames
// leaves it there, and [Recover] puts it back. src must be a folder
// inside a staging folder from [Stage] made beside target.
func Place(src, target string) error {
	if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(src, target)
	}
	if err := exchange(src, target); err == nil {
		return os.RemoveAll(src)
	} else if !errors.Is(err, errNoExchange) {
		return err
	}
	aside := filepath.Dir(src) + ".old"
	if err := os.Mkdir(aside, 0o755); err != nil {
		return err
	}
	old := filepath.Join(aside, filepath.Base(target))
	if err := os.Rename(target, old); err != nil {
		os.Remove(aside)
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
	stage, err := Stage(filepath.Dir(target))
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if err := os.Rename(target, filepath.Join(stage, "gone")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Recover cleans what an interrupted install left in the skills folder
// parent: a folder moved aside by [Place] whose replacement never landed
// is put back; every staging folder is removed. It returns the folders
// put back.
func Recover(parent string) ([]string, error) {
	ents, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var restored []string
	var errs []error
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), StagePrefix) {
			continue
		}
		stage := filepath.Join(parent, e.Name())
		if strings.HasSuffix(e.Name(), ".old") {
			// A staging folder ending in .old holds one folder: the
			// skill that was moved aside, under its own name.
			inner, err := os.ReadDir(stage)
			if err == nil && len(inner) == 1 && inner[0].IsDir() {
				target := filepath.Join(parent, inner[0].Name())
				if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
					if err := os.Rename(filepath.Join(stage, inner[0].Name()), target); err != nil {
						errs = append(errs, err)
						continue
					}
					restored = append(restored, target)
				}
			}
		}
		if err := os.RemoveAll(stage); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", stage, err))
		}
	}
	return restored, errors.Join(errs...)
}
