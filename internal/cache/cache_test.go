package cache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPathEncodesOriginAndURI(t *testing.T) {
	c, _ := New(t.TempDir())
	a, err := c.Path("srv-a", "skill://refunds/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Path("srv-b", "skill://refunds/SKILL.md")
	if a == b {
		t.Fatal("same-URI skills of two servers share a cache path (H-43)")
	}
	if want := filepath.Join(c.Root(), "srv-a", "skill", "refunds", "SKILL.md"); a != want {
		t.Errorf("Path = %s, want %s", a, want)
	}
	p, _ := c.Path("srv-a", "skill://x/a%20b/SKILL.md")
	if !strings.HasSuffix(p, filepath.Join("x", "a%20b", "SKILL.md")) {
		t.Errorf("segment not percent-encoded: %s", p)
	}
	for _, bad := range []string{"skill://x/%2e%2e/y", "file:///etc/passwd"} {
		if _, err := c.Path("a", bad); err == nil {
			t.Errorf("Path(%q) accepted", bad)
		}
	}
	if _, err := c.Path("../x", "skill://a/SKILL.md"); err == nil {
		t.Error("label with a separator accepted")
	}
}

func TestPutGetReverifies(t *testing.T) {
	c, _ := New(t.TempDir())
	data := []byte("hello")
	d := Digest(data)
	if err := c.Put("docs", "skill://a/SKILL.md", data); err != nil {
		t.Fatal(err)
	}
	got, ok := c.Get("docs", "skill://a/SKILL.md", d, 5)
	if !ok || string(got) != "hello" {
		t.Fatalf("Get = %q, %v", got, ok)
	}
	p, _ := c.Path("docs", "skill://a/SKILL.md")
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o444 {
		t.Errorf("cached file mode %v, want 0444 (never writable or executable)", st.Mode().Perm())
	}
	// A model-run tool rewrites the cached copy; the digest is
	// recomputed on access, so the tampered bytes are a miss.
	os.Chmod(p, 0o644)
	os.WriteFile(p, []byte("HELLO"), 0o644)
	if got, ok := c.Get("docs", "skill://a/SKILL.md", d, 5); ok {
		t.Fatalf("tampered cache served: %q", got)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Error("tampered copy not removed")
	}
	// Another origin never sees docs' copy.
	c.Put("docs", "skill://a/SKILL.md", data)
	if _, ok := c.Get("other", "skill://a/SKILL.md", d, 5); ok {
		t.Error("cache hit across origins")
	}
	if err := c.RemoveOrigin("docs"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.Root(), "docs")); !os.IsNotExist(err) {
		t.Error("RemoveOrigin left files behind")
	}
}

func TestCheckOutside(t *testing.T) {
	dir := t.TempDir()
	c, _ := New(filepath.Join(dir, "skills", "cache"))
	if err := c.CheckOutside(filepath.Join(dir, "skills")); err == nil {
		t.Error("cache inside a discovery path accepted")
	}
	if err := c.CheckOutside(filepath.Join(dir, "other")); err != nil {
		t.Error(err)
	}
}
