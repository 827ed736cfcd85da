package gitsource_test

import (
	"cmp"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gitsource"
)

func open(t *testing.T, spec string, opts *gitsource.Options) (*gitsource.Source, error) {
	t.Helper()
	sp, err := gitsource.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &gitsource.Options{}
	}
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	if opts.Credentials == nil {
		opts.Credentials = &gitsource.Credentials{}
	}
	if opts.Logger == nil {
		opts.Logger = newLogger(io.Discard)
	}
	return gitsource.Open(context.Background(), sp, opts)
}

func mustOpen(t *testing.T, spec string, opts *gitsource.Options) *gitsource.Source {
	t.Helper()
	s, err := open(t, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// body returns the content served for a skill's SKILL.md.
func body(t *testing.T, c *catalog.Catalog, uri string) string {
	t.Helper()
	f := c.File(uri)
	if f == nil {
		var have []string
		for _, s := range c.Skills() {
			have = append(have, s.URI)
		}
		t.Fatalf("%s not served; serving %v; diagnostics %v", uri, have, c.Diagnostics())
	}
	b, err := c.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPins(t *testing.T) {
	r := newRemote(t)
	c1 := r.commit("one", map[string]string{"skills/pdf/SKILL.md": skillMD("pdf", "first")})
	git(t, r.work, "tag", "-a", "-m", "v1", "v1")
	r.push("main", "v1")
	r.commit("two", map[string]string{"skills/pdf/SKILL.md": skillMD("pdf", "second")})
	r.push("main")

	latest := "second"
	for _, tc := range []struct{ name, ref, want string }{
		{"tag", "v1", "first"},
		{"commit", c1, "first"},
		{"branch", "main", ""}, // the latest
		{"default branch", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := "git+" + r.fileURL()
			if tc.ref != "" {
				spec += "@" + tc.ref
			}
			s := mustOpen(t, spec+"#skills", nil)
			want := cmp.Or(tc.want, latest)
			if got := body(t, s.Catalog(), "skill://pdf/SKILL.md"); !strings.Contains(got, "description: "+want+"\n") {
				t.Fatalf("served %q, want the %q version", got, want)
			}
			pinned := tc.ref == "v1" || tc.ref == c1
			if s.Pinned() != pinned {
				t.Errorf("Pinned() = %v, want %v", s.Pinned(), pinned)
			}
			// A pin never moves, whatever the remote does.
			latest = "after-" + strings.ReplaceAll(tc.name, " ", "-")
			r.commit("three", map[string]string{"skills/pdf/SKILL.md": skillMD("pdf", latest)})
			r.push("main")
			c, changed, err := s.Update(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if changed == pinned {
				t.Errorf("Update changed=%v for pinned=%v", changed, pinned)
			}
			got := body(t, c, "skill://pdf/SKILL.md")
			if pinned && !strings.Contains(got, "first") || !pinned && !strings.Contains(got, latest) {
				t.Errorf("after a push, served %q", got)
			}
		})
	}
}

func TestBranchMovesReusesDigests(t *testing.T) {
	r := newRemote(t)
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c"} {
		files[n+"/SKILL.md"] = skillMD(n, "skill "+n)
		files[n+"/ref.txt"] = "reference " + n
	}
	r.commit("init", files)
	r.push("main")
	srv := serveHTTPGit(t, r.root, "", "")
	s := mustOpen(t, "git+"+srv.URL+"/repo.git@main", nil)
	first := s.Catalog()
	if n := len(first.Skills()); n != 3 {
		t.Fatalf("%d skills, want 3: %v", n, first.Diagnostics())
	}
	old := s.Status().Commit

	c2 := r.commit("touch b", map[string]string{"b/ref.txt": "reference b, revised"})
	r.push("main")
	next, changed, err := s.Update(context.Background())
	if err != nil || !changed {
		t.Fatalf("Update = %v, %v", changed, err)
	}
	if s.Status().Commit != c2 || old == c2 {
		t.Errorf("status commit %s, want %s", s.Status().Commit, c2)
	}
	if st := next.Stats(); st.Hashed != 1 || st.Reused != 5 {
		t.Errorf("hashed %d, reused %d: want only the changed blob hashed (1) and 5 reused", st.Hashed, st.Reused)
	}
	if next.ID() == first.ID() {
		t.Error("a new commit kept the snapshot id")
	}
	f := next.File("skill://b/ref.txt")
	b, err := next.ReadFile(f)
	if err != nil || string(b) != "reference b, revised" {
		t.Errorf("read %q, %v", b, err)
	}
	// Nothing new: no change and no rebuild.
	if _, changed, err := s.Update(context.Background()); err != nil || changed {
		t.Errorf("Update without a push = %v, %v", changed, err)
	}
}

func TestForcePushAndDeletedRef(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{"x/SKILL.md": skillMD("x", "one")})
	r.push("main")
	r.commit("two", map[string]string{"x/SKILL.md": skillMD("x", "two")})
	git(t, r.work, "branch", "feature")
	r.push("main", "feature")
	log := &logBuffer{}
	s := mustOpen(t, "git+"+r.fileURL()+"@feature", &gitsource.Options{Logger: newLogger(log)})
	if got := body(t, s.Catalog(), "skill://x/SKILL.md"); !strings.Contains(got, "two") {
		t.Fatalf("served %q", got)
	}
	// Force-push the branch back to the first commit, with other content.
	git(t, r.work, "checkout", "-q", "feature")
	git(t, r.work, "reset", "-q", "--hard", "HEAD~1")
	r.commit("rewritten", map[string]string{"x/SKILL.md": skillMD("x", "rewritten")})
	r.push("--force", "feature")
	c, changed, err := s.Update(context.Background())
	if err != nil || !changed {
		t.Fatalf("Update after force-push = %v, %v", changed, err)
	}
	if got := body(t, c, "skill://x/SKILL.md"); !strings.Contains(got, "rewritten") {
		t.Fatalf("after force-push served %q", got)
	}
	good := s.Status().Commit

	// Delete the branch: the last good commit stays, and says so.
	git(t, r.work, "checkout", "-q", "main")
	r.push("--delete", "feature")
	c, changed, err = s.Update(context.Background())
	if err == nil || changed {
		t.Fatalf("Update after deleting the branch = %v, %v; want an error", changed, err)
	}
	if !strings.Contains(err.Error(), `no branch or tag "feature"`) {
		t.Errorf("error %q does not say the branch is gone", err)
	}
	if got := body(t, c, "skill://x/SKILL.md"); !strings.Contains(got, "rewritten") {
		t.Errorf("after the branch was deleted served %q, want the last good commit", got)
	}
	st := s.Status()
	if st.Commit != good || st.Err == "" || st.Since.IsZero() {
		t.Errorf("status %+v: want commit %s and the error", st, good)
	}
	if err := s.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), good[:12]) {
		t.Errorf("Ready = %v, want an error naming the commit still served", err)
	}
	if !strings.Contains(log.String(), "still serving the last good commit") {
		t.Errorf("log does not say the last good commit is kept:\n%s", log)
	}
}

func TestUnreachableRemote(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{"x/SKILL.md": skillMD("x", "one")})
	r.push("main")
	srv := serveHTTPGit(t, r.root, "", "")
	cache := t.TempDir()
	spec := "git+" + srv.URL + "/repo.git"
	s := mustOpen(t, spec, &gitsource.Options{CacheDir: cache})
	srv.Close()

	c, _, err := s.Update(context.Background())
	if err == nil {
		t.Fatal("Update with the server down succeeded")
	}
	if got := body(t, c, "skill://x/SKILL.md"); !strings.Contains(got, "one") {
		t.Errorf("served %q, want the last good commit", got)
	}
	if s.Ready(context.Background()) == nil {
		t.Error("Ready is nil with the remote down")
	}

	// A restart with the mirror starts offline from the cached commit.
	log := &logBuffer{}
	s2, err := open(t, spec, &gitsource.Options{CacheDir: cache, Logger: newLogger(log)})
	if err != nil {
		t.Fatalf("offline restart with a mirror: %v", err)
	}
	if s2.Status().Commit != s.Status().Commit || s2.Status().Err == "" {
		t.Errorf("offline restart status %+v", s2.Status())
	}
	if !strings.Contains(log.String(), "still serving") {
		t.Errorf("offline start not logged:\n%s", log)
	}

	// Without a mirror there is nothing to serve: a clear error.
	_, err = open(t, spec, nil)
	if !errors.Is(err, gitsource.ErrUnavailable) || !strings.Contains(err.Error(), "no cached copy") {
		t.Errorf("cold start with the remote down: %v", err)
	}
}

// TestRestartReusesDigests restarts on a warm mirror: only SKILL.md files
// are read again. A digests file that lies is caught when the file is
// served, and the next build reads it.
func TestRestartReusesDigests(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{
		"a/SKILL.md": skillMD("a", "a"), "a/ref.md": "reference a",
		"b/SKILL.md": skillMD("b", "b"), "b/ref.md": "reference b",
	})
	r.push("main")
	cache := t.TempDir()
	first := mustOpen(t, "git+"+r.fileURL(), &gitsource.Options{CacheDir: cache})
	if st := first.Catalog().Stats(); st.Hashed != 4 {
		t.Fatalf("cold start hashed %d files, want 4", st.Hashed)
	}
	warm := mustOpen(t, "git+"+r.fileURL(), &gitsource.Options{CacheDir: cache})
	if st := warm.Catalog().Stats(); st.Hashed != 2 || st.Reused != 2 {
		t.Errorf("warm start hashed %d and reused %d, want the 2 SKILL.md hashed and 2 reused", st.Hashed, st.Reused)
	}
	if warm.Catalog().ID() != first.Catalog().ID() {
		t.Error("the warm start publishes another snapshot")
	}

	// Corrupt the kept digest of a/ref.md.
	files, _ := filepath.Glob(filepath.Join(cache, "*.git", "skillport-digests"))
	if len(files) != 1 {
		t.Fatalf("digests files %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	good := first.Catalog().File("skill://a/ref.md").Digest
	bad := "sha256:" + strings.Repeat("0", 64)
	if err := os.WriteFile(files[0], []byte(strings.Replace(string(data), good, bad, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	lied := mustOpen(t, "git+"+r.fileURL(), &gitsource.Options{CacheDir: cache})
	c := lied.Catalog()
	f := c.File("skill://a/ref.md")
	if f.Digest != bad {
		t.Fatalf("digest %s: the test did not take effect", f.Digest)
	}
	if _, err := c.ReadFile(f); !errors.Is(err, catalog.ErrChanged) {
		t.Fatalf("serving a file whose kept digest lies: %v, want ErrChanged", err)
	}
	fixed, err := c.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if got := fixed.File("skill://a/ref.md").Digest; got != good {
		t.Errorf("after the reload the digest is %s, want %s", got, good)
	}

	// A damaged file is ignored: everything is read.
	if err := os.WriteFile(files[0], []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := mustOpen(t, "git+"+r.fileURL(), &gitsource.Options{CacheDir: cache}).Catalog().Stats(); st.Hashed != 4 {
		t.Errorf("with a damaged digests file hashed %d, want 4", st.Hashed)
	}
}

// TestMissingFolderOrRef fails at start-up naming what is missing.
func TestMissingFolderOrRef(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{"skills/x/SKILL.md": skillMD("x", "x"), "file.txt": "not a folder"})
	r.push("main")
	for spec, want := range map[string]string{
		"git+" + r.fileURL() + "#nope":                        `has no folder "nope"`,
		"git+" + r.fileURL() + "#file.txt":                    `"file.txt" is not a folder`,
		"git+" + r.fileURL() + "@nobranch":                    `no branch or tag "nobranch"`,
		"git+" + r.fileURL() + "@" + strings.Repeat("ab", 20): "is not reachable from any branch or tag",
	} {
		if _, err := open(t, spec, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", spec, err, want)
		}
	}
}

// TestRecheckTags: a tag already mirrored is served as mirrored (a pin,
// with no request to the remote) unless RecheckTags is set; then one ref
// advertisement shows whether it moved, and only a moved tag is fetched.
func TestRecheckTags(t *testing.T) {
	r := newRemote(t)
	first := r.commit("one", map[string]string{"pdf/SKILL.md": skillMD("pdf", "first")})
	git(t, r.work, "tag", "-a", "-m", "v1", "v1")
	r.push("main", "v1")
	srv := serveHTTPGit(t, r.root, "", "")
	spec := "git+" + srv.URL + "/repo.git@v1"
	cache := t.TempDir()
	if s := mustOpen(t, spec, &gitsource.Options{CacheDir: cache}); s.Status().Commit != first {
		t.Fatalf("first open serves %s, want %s", s.Status().Commit, first)
	}

	moved := r.commit("two", map[string]string{"pdf/SKILL.md": skillMD("pdf", "second")})
	git(t, r.work, "tag", "-f", "-a", "-m", "v1 again", "v1")
	r.push("-f", "main", "v1")

	for _, tc := range []struct {
		name     string
		recheck  bool
		want     string
		requests int // made to the remote by this open
	}{
		{"pinned", false, first, 0},
		{"rechecked, moved", true, moved, 3},   // the advertisement, then the fetch (its own advertisement and the pack)
		{"rechecked, unmoved", true, moved, 1}, // the advertisement only
		{"pinned after the recheck", false, moved, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.Requests()
			s := mustOpen(t, spec, &gitsource.Options{CacheDir: cache, RecheckTags: tc.recheck})
			if got := s.Status().Commit; got != tc.want {
				t.Errorf("serves %s, want %s", got, tc.want)
			}
			if !s.Pinned() {
				t.Error("a tag is not reported pinned")
			}
			if n := srv.Requests() - before; n != tc.requests {
				t.Errorf("%d requests to the remote, want %d", n, tc.requests)
			}
		})
	}
}
