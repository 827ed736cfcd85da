package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillport/skillport/host/skilluri"
)

// ErrMaterialize is wrapped by errors from [Materialize].
var ErrMaterialize = errors.New("cannot materialize skill")

// MaterializeOptions configure [Materialize].
type MaterializeOptions struct {
	// Replace lets an existing skill folder of the same name be replaced.
	Replace bool
}

// Materialize writes a verified skill (files from [Host.FetchAll]) into
// dir/<name>, for hosts that read skills from folders only. It is all or
// nothing: files are written into a staging folder inside dir through
// os.Root, as regular files with mode 0644 (never executable, never links),
// and the folder is renamed into place only when complete. Paths come from
// the validated URIs; names that would collide on a case-insensitive or
// normalising filesystem are refused (H-41), and so are non-ASCII names,
// whose Unicode normalisation this package cannot check. It returns the
// folder written.
//
// The result is an ordinary local skill: the user who pulls it takes
// responsibility for it, including its allowed-tools.
func Materialize(dir string, e *Entry, files []*File, opts *MaterializeOptions) (string, error) {
	var o MaterializeOptions
	if opts != nil {
		o = *opts
	}
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w %s from %s: %s", ErrMaterialize, e.Name, e.Origin, fmt.Sprintf(format, args...))
	}
	if e.Dynamic || e.Files == nil {
		return fail("its content cannot be verified (dynamic)")
	}
	if len(files) != len(e.Files) {
		return fail("%d of %d files were fetched", len(files), len(e.Files))
	}
	folded := map[string]string{}
	rels := make([]string, len(files))
	for i, f := range files {
		if _, ok := e.File(f.URI); !ok || !f.Verified {
			return fail("%s is not a verified file of the skill", f.URI)
		}
		u, err := skilluri.Parse(f.URI)
		if err != nil {
			return fail("%v", err)
		}
		rel, _ := skilluri.Within(e.Root, f.URI)
		n := strings.Count(rel, "/") + 1
		segs := u.Segments[len(u.Segments)-n:]
		for _, s := range segs {
			for j := 0; j < len(s); j++ {
				if s[j] >= 0x80 || s[j] < 0x20 || strings.ContainsRune(`<>:"|?*`, rune(s[j])) {
					return fail("file name %q is not plain ASCII; it is not written, since it could collide with another name after Unicode normalisation", s)
				}
			}
		}
		p := strings.Join(segs, "/")
		k := strings.ToLower(p)
		if prev, dup := folded[k]; dup {
			return fail("%q and %q would be the same file on a case-insensitive filesystem", prev, p)
		}
		folded[k] = p
		rels[i] = p
	}
	for i, p := range rels {
		// A file may not also be a directory of another file (a/b and a/b/c).
		for j, q := range rels {
			if i != j && strings.HasPrefix(strings.ToLower(q), strings.ToLower(p)+"/") {
				return fail("%q is both a file and a directory", p)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("%v", err)
	}
	stage, err := os.MkdirTemp(dir, ".skillport-pull-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(stage)
	if err := os.Chmod(stage, 0o755); err != nil {
		return fail("%v", err)
	}
	root, err := os.OpenRoot(stage)
	if err != nil {
		return fail("%v", err)
	}
	defer root.Close()
	for i, f := range files {
		p := filepath.FromSlash(rels[i])
		if d := filepath.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fail("%v", err)
			}
		}
		w, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fail("%v", err)
		}
		_, werr := w.Write(f.Data)
		if err := errors.Join(werr, w.Close()); err != nil {
			return fail("%v", err)
		}
	}
	target := filepath.Join(dir, e.Name)
	if _, err := os.Lstat(target); err == nil {
		if !o.Replace {
			return fail("%s already exists; remove it or pass the replace option", target)
		}
		old := stage + ".old"
		if err := os.Rename(target, old); err != nil {
			return fail("%v", err)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(stage, target); err != nil {
		return fail("%v", err)
	}
	return target, nil
}
