package install

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillport/skillport/internal/skilltest"
)

// checkTree writes n skill folders of 5 files each (4 KiB) and returns
// their folders.
func checkTree(b *testing.B, n int) []string {
	root := b.TempDir()
	var dirs []string
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("skill-%04d", i))
		files := map[string]string{"SKILL.md": "---\nname: x\n---\n"}
		for j := range 4 {
			files[fmt.Sprintf("ref/f%d.md", j)] = string(make([]byte, 4096))
		}
		skilltest.WriteFiles(b, dir, files)
		dirs = append(dirs, dir)
	}
	return dirs
}

// BenchmarkCheck compares what check does per folder (ReadTree: walk
// through os.Root, hash every file) with hashing the same files by path
// alone, as sha256sum does: the issue asks for at most 1.5 times.
func BenchmarkCheck(b *testing.B) {
	dirs := checkTree(b, 1000)
	var paths []string
	for _, d := range dirs {
		files, _, err := ReadTree(d)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range files {
			paths = append(paths, filepath.Join(d, filepath.FromSlash(f.Path)))
		}
	}
	b.Run("ReadTree", func(b *testing.B) {
		for b.Loop() {
			for _, d := range dirs {
				if _, _, err := ReadTree(d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("sha256-by-path", func(b *testing.B) {
		for b.Loop() {
			for _, p := range paths {
				f, err := os.Open(p)
				if err != nil {
					b.Fatal(err)
				}
				h := sha256.New()
				io.Copy(h, f)
				f.Close()
			}
		}
	})
}
