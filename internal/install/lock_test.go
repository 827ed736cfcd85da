package install

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTreeDigestFraming: the tree whose file "ab" holds "c" and the tree
// whose file "a" holds "bc" concatenate to the same bytes, which is how
// an unframed hash collides; their digests differ.
func TestTreeDigestFraming(t *testing.T) {
	one := []File{FileOf("ab", []byte("c"))}
	two := []File{FileOf("a", []byte("bc"))}
	if sha256.Sum256([]byte("ab"+"c")) != sha256.Sum256([]byte("a"+"bc")) {
		t.Fatal("the two trees should concatenate alike")
	}
	if TreeDigest(one) == TreeDigest(two) {
		t.Errorf("ab=c and a=bc share the digest %s", TreeDigest(one))
	}
	// Splitting across files must not collide either.
	three := []File{FileOf("a", []byte("b")), FileOf("c", nil)}
	four := []File{FileOf("a", nil), FileOf("bc", nil)}
	if TreeDigest(three) == TreeDigest(four) {
		t.Error("two trees of two files share a digest")
	}
	// Order of the list does not matter; the set does.
	if TreeDigest([]File{three[1], three[0]}) != TreeDigest(three) {
		t.Error("the digest depends on the order of the list")
	}
	// The set digest frames source, path and name too.
	a := []Skill{{Source: "s", Path: "ab", Name: "c", Files: one}}
	b := []Skill{{Source: "sa", Path: "b", Name: "c", Files: one}}
	if SetDigest(a) == SetDigest(b) {
		t.Error("source and path are not framed in the set digest")
	}
}

func validLock() *Lock {
	l := &Lock{Skills: []Skill{{
		Name: "hello", Path: "acme/hello", Source: "./skills",
		Resolved:  Resolved{Kind: "directory", Dir: "/src/skills"},
		Files:     []File{FileOf("SKILL.md", []byte("---\nname: hello\n---\n")), FileOf("scripts/run.sh", []byte("#!/bin/sh\n"))},
		Installed: []Target{{Agent: "claude-code", Dir: "/home/u/.claude/skills/hello"}},
	}}}
	l.Normalize()
	return l
}

func TestParse(t *testing.T) {
	good := validLock().Marshal()
	got, err := Parse("skills.lock", good)
	if err != nil {
		t.Fatalf("a lock as written: %v", err)
	}
	if !bytes.Equal(got.Marshal(), good) {
		t.Errorf("round trip changed the lock:\n%s\nwant\n%s", got.Marshal(), good)
	}
	edit := func(f func(l *Lock)) []byte {
		l := validLock()
		f(l)
		l.Normalize()
		return l.Marshal()
	}
	stale := func(f func(l *Lock)) []byte { // edited after its digests were set
		l := validLock()
		f(l)
		return mustJSON(l)
	}
	site := edit(func(l *Lock) {
		l.Skills[0].Resolved = Resolved{Kind: "site", URL: "https://example.com/", Document: "sha256:" + strings.Repeat("a", 64)}
	})
	if _, err := Parse("skills.lock", site); err != nil {
		t.Errorf("a site's record: %v", err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not JSON", []byte("{"), "unexpected EOF"},
		{"unknown field", bytes.Replace(good, []byte(`"version"`), []byte(`"extra": 1, "version"`), 1), `unknown field "extra"`},
		{"two objects", append(bytes.Clone(good), good...), "data after the JSON object"},
		{"version", bytes.Replace(good, []byte(`"version": 1`), []byte(`"version": 2`), 1), "version 2"},
		{"dotdot path", edit(func(l *Lock) { l.Skills[0].Files[1].Path = "../x" }), `"../x" is not a clean relative path`},
		{"absolute path", edit(func(l *Lock) { l.Skills[0].Files[1].Path = "/etc/x" }), "not a clean relative path"},
		{"backslash path", edit(func(l *Lock) { l.Skills[0].Files[1].Path = `a\..\x` }), "not a clean relative path"},
		{"unclean path", edit(func(l *Lock) { l.Skills[0].Files[1].Path = "a//x" }), "not a clean relative path"},
		{"bad sha", edit(func(l *Lock) { l.Skills[0].Files[1].SHA256 = strings.ToUpper(l.Skills[0].Files[1].SHA256) }), "64 lowercase hex"},
		{"negative size", edit(func(l *Lock) { l.Skills[0].Files[1].Size = -1 }), "negative size"},
		{"no SKILL.md", edit(func(l *Lock) { l.Skills[0].Files = l.Skills[0].Files[1:] }), "no SKILL.md"},
		{"twice", edit(func(l *Lock) { l.Skills = append(l.Skills, l.Skills[0]) }), "listed twice"},
		{"file twice", edit(func(l *Lock) { l.Skills[0].Files = append(l.Skills[0].Files, l.Skills[0].Files[0]) }), "listed twice"},
		{"bad name", edit(func(l *Lock) { l.Skills[0].Name = "../x" }), "lowercase letters"},
		{"no source", edit(func(l *Lock) { l.Skills[0].Source = "" }), "no source"},
		{"kind", edit(func(l *Lock) { l.Skills[0].Resolved.Kind = "ftp" }), `resolved.kind "ftp"`},
		{"site without document", edit(func(l *Lock) { l.Skills[0].Resolved = Resolved{Kind: "site", URL: "https://example.com/"} }), "resolved.document must be sha256:"},
		{"site document", edit(func(l *Lock) {
			l.Skills[0].Resolved = Resolved{Kind: "site", URL: "https://example.com/", Document: "sha256:" + strings.Repeat("A", 64)}
		}), "resolved.document must be sha256:"},
		{"target outside the lock's folder", edit(func(l *Lock) { l.Skills[0].Installed[0].Dir = "../x/hello" }), "clean folder ending in hello, absolute or relative to the lock's folder"},
		{"unclean relative target", edit(func(l *Lock) { l.Skills[0].Installed[0].Dir = "a/./hello" }), "clean folder ending in hello"},
		{"relative directory source outside", edit(func(l *Lock) { l.Skills[0].Resolved = Resolved{Kind: "directory", Dir: "../src"} }), "resolved.dir must be absolute or relative"},
		{"target elsewhere", edit(func(l *Lock) { l.Skills[0].Installed[0].Dir = "/home/u/.bashrc.d" }), "ending in hello"},
		{"skill digest", stale(func(l *Lock) { l.Skills[0].Files[1].Size = 99 }), "does not match its files"},
		{"set digest", stale(func(l *Lock) { l.Digest = "sha256:00" }), "does not match its skills"},
		{"too big", append(bytes.Clone(good), bytes.Repeat([]byte(" "), MaxLockSize)...), "more than"},
	} {
		_, err := Parse("skills.lock", tc.data)
		if !errors.Is(err, ErrLock) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "skills.lock") {
			t.Errorf("%s: %v; want ErrLock naming skills.lock and %q", tc.name, err, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	want := []File{FileOf("SKILL.md", []byte("a")), FileOf("run.sh", []byte("b")), FileOf("gone", nil)}
	got := []File{FileOf("SKILL.md", []byte("a")), FileOf("run.sh", []byte("B")), FileOf("new", nil)}
	var lines []string
	for _, d := range Compare(want, got) {
		lines = append(lines, d.String())
	}
	joined := strings.Join(lines, "\n")
	for _, w := range []string{
		"gone removed: lock has sha256:" + want[2].SHA256 + ", found none",
		"new added: lock has none, found sha256:" + got[2].SHA256,
		"run.sh changed: lock has sha256:" + want[1].SHA256 + ", found sha256:" + got[1].SHA256,
	} {
		if !strings.Contains(joined, w) {
			t.Errorf("Compare says\n%s\nwant %q", joined, w)
		}
	}
	if len(lines) != 3 {
		t.Errorf("%d differences, want 3: %q", len(lines), lines)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(validLock().Marshal())
	f.Add([]byte(`{"version":1,"digest":"","skills":[]}`))
	f.Add([]byte(`{"version":1,"skills":[{"name":"a","files":[{"path":"../a"}]}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse("fuzz.lock", data)
		if err != nil {
			if !errors.Is(err, ErrLock) {
				t.Fatalf("error does not wrap ErrLock: %v", err)
			}
			return
		}
		// What Parse accepts, written again, is accepted again, the same.
		out := l.Marshal()
		l2, err := Parse("fuzz.lock", out)
		if err != nil {
			t.Fatalf("re-reading an accepted lock: %v\n%s", err, out)
		}
		if !bytes.Equal(l2.Marshal(), out) {
			t.Fatalf("not stable:\n%s\n%s", out, l2.Marshal())
		}
	})
}

func mustJSON(l *Lock) []byte {
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		panic(err)
	}
	return data
}

// TestWriteRelative: a lock written at a project's root records the
// folders inside the project relative to it, and Read gives them back
// absolute under wherever the lock now is: a project moved or checked out
// elsewhere keeps meaning its own folders. Folders outside stay absolute.
func TestWriteRelative(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	l := &Lock{Skills: []Skill{{
		Name: "hello", Path: "hello", Source: "./skills",
		Resolved: Resolved{Kind: "directory", Dir: filepath.Join(project, "skills")},
		Files:    []File{FileOf("SKILL.md", []byte("x"))},
		Installed: []Target{
			{Agent: "claude-code", Dir: filepath.Join(project, ".claude", "skills", "hello")},
			{Agent: "cursor", Dir: filepath.Join(t.TempDir(), "elsewhere", "hello")},
		},
	}}}
	elsewhere := l.Skills[0].Installed[1].Dir
	path := filepath.Join(project, LockName)
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, l); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), project) {
		t.Errorf("the lock names the project's absolute path:\n%s", data)
	}
	for _, want := range []string{`"dir": ".claude/skills/hello"`, `"dir": "skills"`, `"dir": "` + elsewhere + `"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the lock lacks %s:\n%s", want, data)
		}
	}
	if l.Skills[0].Installed[0].Dir != filepath.Join(project, ".claude", "skills", "hello") {
		t.Error("Write changed the lock it was given")
	}
	moved := filepath.Join(t.TempDir(), "checkout")
	if err := os.Rename(project, moved); err != nil {
		t.Fatal(err)
	}
	got, _, err := Read(filepath.Join(moved, LockName))
	if err != nil {
		t.Fatal(err)
	}
	s := got.Skills[0]
	if s.Resolved.Dir != filepath.Join(moved, "skills") || s.Installed[0].Dir != filepath.Join(moved, ".claude", "skills", "hello") || s.Installed[1].Dir != elsewhere {
		t.Errorf("read back: %+v %+v", s.Resolved, s.Installed)
	}
}
