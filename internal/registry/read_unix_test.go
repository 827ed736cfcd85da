//go:build unix

package registry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/registry"
)

// TestPublishChangedTree: a file that changed after the catalog was built
// (other bytes of the same size, a FIFO swapped in, a file grown) fails
// the publish naming the file, without hanging and without storing
// anything; the content stored is always the content validated.
func TestPublishChangedTree(t *testing.T) {
	conn := connect(t, newDB(t))
	ctx := context.Background()
	for name, change := range map[string]func(p string) error{
		"same size": func(p string) error {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			data[0] ^= 1
			return os.WriteFile(p, data, 0o644)
		},
		"fifo": func(p string) error {
			os.Remove(p)
			return syscall.Mkfifo(p, 0o644)
		},
		"grown": func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("more\n")
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := copyTree(t, examples)
			cat := openCat(t, dir, "acme")
			if err := change(filepath.Join(dir, "code-review", "SKILL.md")); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := registry.Publish(ctx, conn, cat, nil); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, catalog.ErrChanged) || !containsAll(err.Error(), "code-review/SKILL.md", "nothing was published") {
					t.Errorf("publish after the change: %v, want ErrChanged naming code-review/SKILL.md", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("publish hung on the changed tree")
			}
			var n int
			conn.QueryRow(ctx, `SELECT count(*) FROM versions`).Scan(&n)
			if n != 0 {
				t.Errorf("%d versions stored by a failed publish", n)
			}
		})
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
