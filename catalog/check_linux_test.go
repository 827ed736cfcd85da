//go:build linux

package catalog

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// checkerUID is the user the unreadable-file check runs as when the test
// runs as root (nobody, on Debian).
const checkerUID = 65534

// A check stats files other than SKILL.md instead of opening them only
// where the stat proves the open would succeed: a file of another user, or
// one whose owner-read bit is clear, is still opened, and reported when
// that fails, exactly as OpenDir reports it. As root (who may open
// anything) the check runs in a child process as another user.
func TestCheckDirUnreadable(t *testing.T) {
	if dir := os.Getenv("SKILLPORT_CHECK_UNREADABLE"); dir != "" {
		checkUnreadable(t, dir)
		return
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "tree")
	owner := os.Geteuid() // the checker's user
	if owner == 0 {
		owner = checkerUID
	}
	type file struct {
		dir     string
		mode    os.FileMode
		byOther bool // owned by a user other than the checker's
	}
	files := []file{
		{"mine", 0o644, false},   // proven readable by its stat
		{"noread", 0o200, false}, // the owner may not read it: opened, refused
	}
	if os.Geteuid() == 0 {
		files = append(files,
			file{"other", 0o600, true},  // another user's: opened, refused
			file{"shared", 0o644, true}, // another user's: opened, read
		)
	}
	for _, f := range files {
		d := filepath.Join(dir, f.dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(md(f.dir, "d")), 0o644); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "data.txt")
		if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
		if !f.byOther && os.Geteuid() == 0 {
			if err := os.Chown(p, owner, owner); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() != 0 {
		checkUnreadable(t, dir)
		return
	}
	// The child needs to reach the tree and its own binary.
	for _, d := range []string{filepath.Dir(tmp), tmp} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(tmp, "catalog.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestCheckDirUnreadable$", "-test.count=1", "-test.v")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "SKILLPORT_CHECK_UNREADABLE="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: checkerUID, Gid: checkerUID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the check as uid %d failed: %v\n%s", checkerUID, err, out)
	}
}

// checkUnreadable checks dir (see TestCheckDirUnreadable) as this process's
// user: CheckDir must report each data.txt this user may not open, and
// match OpenDir.
func checkUnreadable(t *testing.T, dir string) {
	quiet := slog.New(slog.DiscardHandler)
	c, err := OpenDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, err := CheckDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range rep.Diagnostics {
		if d.Rule == RuleUnreadable {
			got = append(got, d.Path)
		}
	}
	want := []string{"noread/data.txt"}
	if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
		want = []string{"noread/data.txt", "other/data.txt"}
	}
	if !slices.Equal(got, want) {
		t.Errorf("CheckDir reported unreadable %q, want %q\n%s", got, want, diagLines(rep.Diagnostics))
	}
	if !slices.EqualFunc(c.Diagnostics(), rep.Diagnostics, sameDiag) {
		t.Errorf("diagnostics differ\nOpenDir:\n%s\nCheckDir:\n%s", diagLines(c.Diagnostics()), diagLines(rep.Diagnostics))
	}
	if n := len(want); rep.Stats.Invalid != n || c.Stats().Invalid != n {
		t.Errorf("%d skills invalid (OpenDir %d), want %d", rep.Stats.Invalid, c.Stats().Invalid, n)
	}
}

// readDirFD parses getdents records itself: every entry of a directory
// larger than its buffer comes back once, sorted, with its kind, and Info
// stats the entry itself.
func TestCheckReadDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sub")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 3000 { // about 400 KB of records: several reads of 64 KiB
		name := fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 100))
		if i%3 == 0 {
			name += "ü" // not ASCII
		}
		want = append(want, name)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, "a-dir", "b-link")
	if err := os.Mkdir(filepath.Join(dir, "a-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a-dir", filepath.Join(dir, "b-link")); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(dir, "c-fifo")); err != nil {
		t.Fatal(err)
	}
	want = append(want, "c-fifo")
	slices.Sort(want)

	fd, err := syscall.Open(dir, openDirFlags, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &fdDir{fd: fd}
	defer d.close()
	b := &builder{src: &source{dir: root}}
	entries, err := b.readDirFD(d, "sub", make([]byte, direntBufSize))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
		fi, err := e.Info()
		if err != nil {
			t.Fatalf("Info of %s: %v", e.Name(), err)
		}
		if fi.Name() != e.Name() || fi.Mode().Type() != e.Type() {
			t.Errorf("%s: listed as %v, Info says %s %v", e.Name(), e.Type(), fi.Name(), fi.Mode().Type())
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %d entries, want %d (first difference near %d)", len(got), len(want), firstDiff(got, want))
	}
	for name, typ := range map[string]fs.FileMode{"a-dir": fs.ModeDir, "b-link": fs.ModeSymlink, "c-fifo": fs.ModeNamedPipe, want[0]: 0} {
		i, _ := slices.BinarySearch(got, name)
		if entries[i].Type() != typ {
			t.Errorf("%s listed as %v, want %v", name, entries[i].Type(), typ)
		}
	}
}
