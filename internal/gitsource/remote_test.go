package gitsource_test

import (
	"context"
	"crypto/ed25519"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gitsource"
)

func TestPrivateHTTPCredentials(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{"x/SKILL.md": skillMD("x", "private")})
	r.push("main")
	const user, token = "ci", "tok-3b9f1e-SECRET"
	srv := serveHTTPGit(t, r.root, user, token)
	spec := "git+" + srv.URL + "/repo.git@main"
	creds := func(line string) *gitsource.Credentials {
		f := filepath.Join(t.TempDir(), "credentials")
		if err := os.WriteFile(f, []byte("# skillport test\n"+line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return &gitsource.Credentials{File: f}
	}
	for _, tc := range []struct {
		name  string
		creds *gitsource.Credentials
		want  string // in the error; "" for success
	}{
		{"no credentials", &gitsource.Credentials{}, "authentication required: set SKILLPORT_GIT_TOKEN"},
		{"wrong token", creds(strings.Replace(srv.URL, "http://", "http://"+user+":wrong-"+token+"@", 1)), "credentials given were refused"},
		{"other host's entry", creds("http://" + user + ":" + token + "@example.com"), "authentication required"},
		{"malformed file", creds("http//" + token), "not a URL of the form"},
		{"right token", creds(strings.Replace(srv.URL, "http://", "http://"+user+":"+token+"@", 1) + "/repo.git"), ""},
		{"plain http never gets the environment token", &gitsource.Credentials{Token: token}, "authentication required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &logBuffer{}
			s, err := open(t, spec, &gitsource.Options{Credentials: tc.creds, Logger: newLogger(log)})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := body(t, s.Catalog(), "skill://x/SKILL.md"); !strings.Contains(got, "private") {
					t.Errorf("served %q", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), token) || strings.Contains(log.String(), token) {
				t.Errorf("the token leaks into the error or the log: %v\n%s", err, log)
			}
		})
	}
}

func TestGitDaemon(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{"skills/x/SKILL.md": skillMD("x", "over git://")})
	r.push("main")
	base := serveGitDaemon(t, r.root)
	s := mustOpen(t, "git+"+base+"/repo.git#skills", nil)
	if got := body(t, s.Catalog(), "skill://x/SKILL.md"); !strings.Contains(got, "over git://") {
		t.Errorf("served %q", got)
	}
	r.commit("two", map[string]string{"skills/x/SKILL.md": skillMD("x", "moved")})
	r.push("main")
	c, changed, err := s.Update(context.Background())
	if err != nil || !changed || !strings.Contains(body(t, c, "skill://x/SKILL.md"), "moved") {
		t.Errorf("Update over git:// = %v, %v", changed, err)
	}
}

func TestSymlinksSubmodulesLFS(t *testing.T) {
	r := newRemote(t)
	r.commit("files", map[string]string{
		"linked/SKILL.md":          skillMD("linked", "has a link inside"),
		"linked/real.md":           "real",
		"escaping/SKILL.md":        skillMD("escaping", "has a link out"),
		"sub/SKILL.md":             skillMD("sub", "has a submodule"),
		"lfs/SKILL.md":             skillMD("lfs", "has an LFS pointer"),
		"lfs/model.bin":            "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n",
		"plain/SKILL.md":           skillMD("plain", "nothing special"),
		"plain/almost-lfs.txt":     "version 2 of the notes",
		"plain/references/note.md": "note",
	})
	if err := os.Symlink("real.md", filepath.Join(r.work, "linked", "alias.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../etc/passwd", filepath.Join(r.work, "escaping", "passwd")); err != nil {
		t.Fatal(err)
	}
	git(t, r.work, "add", "linked/alias.md", "escaping/passwd")
	// A gitlink: a submodule entry pointing at a commit of another repository.
	git(t, r.work, "update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,sub/vendored")
	git(t, r.work, "commit", "-q", "-m", "links")
	r.push("main")

	log := &logBuffer{}
	s := mustOpen(t, "git+"+r.fileURL(), &gitsource.Options{Logger: newLogger(log)})
	c := s.Catalog()
	diag := func(path string) *catalog.Diagnostic {
		for _, d := range c.Diagnostics() {
			if d.Path == path {
				return &d
			}
		}
		return nil
	}
	// Links are links: never followed, so a skill holding one is reported
	// and not published, as for a directory.
	for _, p := range []string{"linked/alias.md", "escaping/passwd"} {
		d := diag(p)
		if d == nil || d.Rule != catalog.RuleSymlink {
			t.Errorf("%s: diagnostic %+v, want rule %q", p, d, catalog.RuleSymlink)
		}
	}
	if d := diag("escaping/passwd"); d != nil && !strings.Contains(d.Message, "leaves the served tree") {
		t.Errorf("escaping link: %q", d.Message)
	}
	for _, uri := range []string{"skill://linked/SKILL.md", "skill://escaping/SKILL.md"} {
		if c.Skill(uri) != nil {
			t.Errorf("%s is published though it holds a symbolic link", uri)
		}
	}
	// Submodules and LFS pointers are reported and not served as content.
	for p, want := range map[string]string{"sub/vendored": "git submodule", "lfs/model.bin": "Git LFS pointer"} {
		d := diag(p)
		if d == nil || d.Rule != catalog.RuleSpecialFile || !strings.Contains(d.Message, want) {
			t.Errorf("%s: diagnostic %+v, want %q", p, d, want)
		}
	}
	if c.File("skill://lfs/model.bin") != nil || c.File("skill://sub/vendored") != nil {
		t.Error("a pointer or submodule is served as a file")
	}
	if c.File("skill://plain/almost-lfs.txt") == nil || c.File("skill://plain/references/note.md") == nil {
		t.Errorf("ordinary files missing: %v", c.Diagnostics())
	}
	if !strings.Contains(log.String(), "Git LFS pointer") {
		t.Errorf("the LFS pointer is not in the log:\n%s", log)
	}
}

// TestManySkills serves a 10,000-skill repository, generated with git
// fast-import, and moves it by one skill.
func TestManySkills(t *testing.T) {
	if testing.Short() {
		t.Log("short mode: 1,000 skills instead of 10,000")
	}
	n := 10000
	if testing.Short() {
		n = 1000
	}
	r := newRemote(t)
	start := time.Now()
	importSkills(t, r, n, "first")
	t.Logf("generated %d skills in %v", n, time.Since(start))
	start = time.Now()
	s := mustOpen(t, "git+"+r.fileURL(), nil)
	c := s.Catalog()
	t.Logf("cloned and built in %v (catalog %v)", time.Since(start), c.Stats().Duration)
	if got := c.Stats().Skills; got != n {
		t.Fatalf("%d skills, want %d; %v", got, n, c.Diagnostics()[:min(3, len(c.Diagnostics()))])
	}
	start = time.Now()
	r.commit("one more", map[string]string{fmt.Sprintf("s%05d/SKILL.md", 42): skillMD(fmt.Sprintf("s%05d", 42), "changed")})
	r.push("main")
	t.Logf("committed and pushed in %v", time.Since(start))
	start = time.Now()
	next, changed, err := s.Update(context.Background())
	if err != nil || !changed {
		t.Fatalf("Update = %v, %v", changed, err)
	}
	t.Logf("updated in %v (catalog %v)", time.Since(start), next.Stats().Duration)
	if st := next.Stats(); st.Hashed != 1 || st.Skills != n {
		t.Errorf("after touching one skill: %d hashed, %d skills", st.Hashed, st.Skills)
	}
}

// importSkills commits n skills (SKILL.md and one reference each) on main
// of the bare repository through git fast-import, which writes them in one
// pack, and points the working repository's index at them without a checkout.
func importSkills(t testing.TB, r *remote, n int, desc string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "commit refs/heads/main\ncommitter t <t@example.com> 1700000000 +0000\ndata 4\nmany\n")
	for i := range n {
		name := fmt.Sprintf("s%05d", i)
		for _, f := range [][2]string{
			{name + "/SKILL.md", skillMD(name, desc+" skill number "+name)},
			{name + "/references/ref.md", "# Reference " + name + "\n\n" + strings.Repeat("Some reference text. ", 20) + "\n"},
		} {
			fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n%s\n", f[0], len(f[1]), f[1])
		}
	}
	b.WriteString("done\n")
	gitIn(t, r.bare, strings.NewReader(b.String()), "fast-import", "--quiet", "--force", "--done")
	git(t, r.work, "fetch", "-q", "origin", "main")
	git(t, r.work, "reset", "-q", "--mixed", "FETCH_HEAD")
}

// TestLimits tries to break the bounds on what is read from untrusted
// places: a credentials file and a symbolic link's target.
func TestLimits(t *testing.T) {
	r := newRemote(t)
	r.commit("one", map[string]string{"x/SKILL.md": skillMD("x", "limits")})
	long := strings.Repeat("a/", 2500) + "target" // 5006 bytes
	blob := gitIn(t, r.work, strings.NewReader(long), "hash-object", "-w", "--stdin")
	git(t, r.work, "update-index", "--add", "--cacheinfo", "120000,"+blob+",x/link")
	git(t, r.work, "commit", "-q", "-m", "long link")
	r.push("main")

	s := mustOpen(t, "git+"+r.fileURL(), nil)
	found := false
	for _, d := range s.Catalog().Diagnostics() {
		if d.Path == "x/link" && strings.Contains(d.Message, "longer than 4096 bytes") {
			found = true
		}
	}
	if !found || s.Catalog().Skill("skill://x/SKILL.md") != nil {
		t.Errorf("a 5006-byte link target: diagnostics %v", s.Catalog().Diagnostics())
	}

	big := filepath.Join(t.TempDir(), "credentials")
	line := "https://u:" + strings.Repeat("t", 100) + "@example.com\n"
	if err := os.WriteFile(big, []byte(strings.Repeat(line, gitsource.MaxCredentialsFile/len(line)+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := serveHTTPGit(t, r.root, "u", "p")
	_, err := open(t, "git+"+srv.URL+"/repo.git", &gitsource.Options{Credentials: &gitsource.Credentials{File: big}})
	if err == nil || !strings.Contains(err.Error(), "at most 1048576 bytes") {
		t.Errorf("a credentials file over 1 MiB: %v", err)
	}
}

// TestSSHNeedsKnownHosts checks that an ssh:// source never connects
// without a known_hosts file to check the server's key against.
func TestSSHNeedsKnownHosts(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "known_hosts")
	_, err = open(t, "git+ssh://git@127.0.0.1:1/repo.git", &gitsource.Options{
		Credentials: &gitsource.Credentials{SSHKey: key, KnownHosts: missing}})
	if err == nil || !strings.Contains(err.Error(), "known_hosts "+missing) || !strings.Contains(err.Error(), "must be known") {
		t.Errorf("ssh source without known_hosts: %v", err)
	}
	_, err = open(t, "git+ssh://git@127.0.0.1:1/repo.git", &gitsource.Options{
		Credentials: &gitsource.Credentials{SSHKey: filepath.Join(t.TempDir(), "nokey"), KnownHosts: missing}})
	if err == nil || !strings.Contains(err.Error(), "ssh key") {
		t.Errorf("ssh source with a missing key file: %v", err)
	}
}
