//go:build linux

package registry

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestBeneath: the openat2 reader returns only a regular file of the
// expected size below its directory; anything else (a path or symlink
// leading out, a FIFO, a directory, another size) is left to the careful
// path.
func TestBeneath(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(out, "secret"), "hello")
	write(filepath.Join(dir, "ok"), "hello")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(dir, "sub", "f"), "hello")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(out, "secret"), filepath.Join(dir, "abs")))
	must(os.Symlink(filepath.Join("..", filepath.Base(out), "secret"), filepath.Join(dir, "rel")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	b := openBeneath(dir)
	if b == nil {
		t.Fatal("openat2 unavailable: the kernel must be 5.6 or newer")
	}
	defer b.close()
	for _, tc := range []struct {
		name string
		size int64
		ok   bool
	}{
		{"ok", 5, true},
		{"sub/f", 5, true},
		{"ok", 4, false},
		{"ok", 6, false},
		{"abs", 5, false},
		{"rel", 5, false},
		{"../" + filepath.Base(out) + "/secret", 5, false},
		{filepath.Join(out, "secret"), 5, false},
		{"fifo", 0, false},
		{"sub", 0, false},
		{"missing", 5, false},
	} {
		data, ok := b.read(tc.name, tc.size, nil)
		if ok != tc.ok || (ok && string(data) != "hello") {
			t.Errorf("read(%q, %d) = %q, %v; want ok %v", tc.name, tc.size, data, ok, tc.ok)
		}
	}
}
