package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/skillport/skillport/catalog/internal/gen"
)

// checkTrees are trees whose every diagnostic CheckDir must reproduce: the
// collection shapes (links out of the tree, hard links, renamed folders,
// mixed-case prefixes, duplicates, entry-file variants) and a generated
// real-world tree, plus a tree with a file that cannot be opened and one
// over the limits.
func checkTrees(t *testing.T) map[string]string {
	t.Helper()
	gt := filepath.Join(t.TempDir(), "gen")
	if _, err := (gen.Options{Skills: 200, Seed: 3, RealWorld: true}).Write(gt); err != nil {
		t.Fatal(err)
	}
	limits := t.TempDir()
	for i := range 3 {
		d := filepath.Join(limits, fmt.Sprintf("s%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(md(fmt.Sprintf("s%d", i), "d")), 0o644); err != nil {
			t.Fatal(err)
		}
		for j := range i * 4 {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.txt", j)), make([]byte, 700), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := mkfifo(filepath.Join(limits, "s1", "pipe")); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatal(err)
	}
	// Names a URI cannot hold, in a file and in a directory of a skill, and
	// dot files, one more than the file limit of the "limits" options
	// allows (6) when counted: a check must not count them as sound.
	for _, f := range []string{"s3/SKILL.md", "s3/bad\\name.txt", "s3/ctl\x7fdir/data.txt", "s3/.hidden",
		"s4/SKILL.md", "s4/f0", "s4/f1", "s4/sub/f2", "s4/sub/f3", "s4/sub/f4", "s4/sub/.env"} {
		p := filepath.Join(limits, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte("x")
		if path.Base(f) == "SKILL.md" {
			data = []byte(md(path.Base(path.Dir(f)), "d"))
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]string{"collections": collectionTree(t), "generated": gt, "limits": limits}
}

// CheckDir reports exactly what OpenDir's catalog carries: the same
// diagnostics in the same order and the same skill counts, on every walk
// and with every option that changes findings.
func TestCheckDirMatchesOpenDir(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	opts := map[string]Options{
		"default":    {},
		"strict":     {Strict: true},
		"hardlinks":  {AllowHardlinks: true},
		"dotfiles":   {IncludeDotFiles: true},
		"limits":     {MaxFiles: 6, MaxBytes: 5000},
		"prefix":     {Prefix: "acme"},
		"concurrent": {Concurrency: 7},
	}
	for tname, dir := range checkTrees(t) {
		for oname, o := range opts {
			for _, w := range []struct {
				name string
				fd   bool
			}{{"fd", true}, {"fs", false}} {
				t.Run(fmt.Sprintf("%s/%s/%s", tname, oname, w.name), func(t *testing.T) {
					useFDWalk = w.fd && fdWalkSupported
					defer func() { useFDWalk = fdWalkSupported }()
					o.Logger = quiet
					c, err := OpenDir(dir, &o)
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					rep, err := CheckDir(dir, &o)
					if err != nil {
						t.Fatal(err)
					}
					if len(c.Diagnostics()) == 0 && tname != "generated" {
						t.Fatal("the tree gives no diagnostic: the comparison proves nothing")
					}
					if !slices.EqualFunc(c.Diagnostics(), rep.Diagnostics, sameDiag) {
						t.Errorf("diagnostics differ\nOpenDir:\n%s\nCheckDir:\n%s", diagLines(c.Diagnostics()), diagLines(rep.Diagnostics))
					}
					want, got := c.Stats(), rep.Stats
					if got.Skills != want.Skills || got.Invalid != want.Invalid || got.Skipped != want.Skipped || got.Found != want.Found {
						t.Errorf("counts: CheckDir %d valid, %d invalid, %d skipped, %d found; OpenDir %d, %d, %d, %d",
							got.Skills, got.Invalid, got.Skipped, got.Found, want.Skills, want.Invalid, want.Skipped, want.Found)
					}
				})
			}
		}
	}
}

func sameDiag(a, b Diagnostic) bool {
	return a.Path == b.Path && a.Skill == b.Skill && a.Line == b.Line && a.Column == b.Column &&
		a.Rule == b.Rule && a.Severity == b.Severity && a.Message == b.Message && fmt.Sprint(a.Err) == fmt.Sprint(b.Err)
}

func diagLines(ds []Diagnostic) string {
	var s string
	for _, d := range ds {
		s += fmt.Sprintf("  %s:%d:%d %s %s: %s\n", d.Path, d.Line, d.Column, d.Severity, d.Rule, d.Message)
	}
	return s
}

// Check reads no file but SKILL.md: every other file is opened (so that
// one that cannot be opened is still reported) and stat'ed, never read.
func TestCheckReadsOnlySkillMD(t *testing.T) {
	dir := collectionTree(t)
	quiet := slog.New(slog.DiscardHandler)
	c, err := Open(os.DirFS(dir), &Options{Logger: quiet, AllowHardlinks: true})
	if err != nil {
		t.Fatal(err)
	}
	fsys := &readCounter{FS: os.DirFS(dir), fail: "hardlinks/linked/data.txt"}
	rep, err := Check(fsys, &Options{Logger: quiet, AllowHardlinks: true})
	if err != nil {
		t.Fatal(err)
	}
	if fsys.other.Load() != 0 {
		t.Errorf("Check read %d bytes of files other than SKILL.md", fsys.other.Load())
	}
	if fsys.opened.Load() == 0 {
		t.Error("Check opened no file but SKILL.md: unreadable files would go unreported")
	}
	var unreadable bool
	for _, d := range rep.Diagnostics {
		unreadable = unreadable || d.Path == fsys.fail && d.Rule == RuleUnreadable
	}
	if !unreadable {
		t.Errorf("the file that cannot be opened is not reported:\n%s", diagLines(rep.Diagnostics))
	}
	if rep.Stats.Skills != c.Stats().Skills-1 {
		t.Errorf("Check published %d skills, Open %d; want one fewer (the unreadable file's)", rep.Stats.Skills, c.Stats().Skills)
	}
}

// readCounter counts the bytes read from files other than SKILL.md, and
// refuses to open the file named fail.
type readCounter struct {
	fs.FS
	fail          string
	other, opened atomic.Int64
}

func (r *readCounter) Open(name string) (fs.File, error) {
	if name == r.fail {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	f, err := r.FS.Open(name)
	if err != nil || path.Base(name) == FileNameSKILL {
		return f, err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		r.opened.Add(1)
	}
	return &countedFile{File: f, n: &r.other}, nil
}

type countedFile struct {
	fs.File
	n *atomic.Int64
}

func (f *countedFile) Read(p []byte) (int, error) {
	k, err := f.File.Read(p)
	f.n.Add(int64(k))
	return k, err
}

func (f *countedFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if d, ok := f.File.(fs.ReadDirFile); ok {
		return d.ReadDir(n)
	}
	return nil, errors.New("not a directory")
}
