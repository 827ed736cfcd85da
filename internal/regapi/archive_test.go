package regapi_test

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/regapi"
)

// FuzzExtract: whatever the bytes, Extract ends within its limits, with
// an error or a tree, and writes nothing outside its directory.
func FuzzExtract(f *testing.F) {
	f.Add(tgz(f, &tar.Header{Name: "notes/SKILL.md", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644}))
	f.Add(tgz(f, &tar.Header{Name: "../x", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644}))
	f.Add(tgz(f, &tar.Header{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755}, &tar.Header{Name: "a/b", Typeflag: tar.TypeLink, Linkname: "../../etc/passwd"}))
	f.Add([]byte("\x1f\x8b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		outer := t.TempDir()
		dir := filepath.Join(outer, "tree")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		err := regapi.Extract(bytes.NewReader(data), dir, regapi.Limits{MaxFiles: 16, MaxBytes: 1 << 16})
		var total int64
		files := 0
		filepath.Walk(outer, func(p string, fi os.FileInfo, _ error) error {
			if fi == nil || p == outer || p == dir {
				return nil
			}
			if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
				t.Errorf("Extract wrote %s, outside its directory", p)
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				t.Errorf("Extract made a link %s", p)
			}
			if fi.Mode().IsRegular() {
				files++
				total += fi.Size()
			}
			return nil
		})
		if files > 16 || total > 1<<16 {
			t.Errorf("Extract went past its limits: %d files, %d bytes (err %v)", files, total, err)
		}
	})
}
