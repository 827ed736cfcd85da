package gitspec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/gitspec"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in               string
		url, ref, subdir string
		err              string // in the error; "" for success
	}{
		{in: "git+https://github.com/anthropics/skills@main#skills", url: "https://github.com/anthropics/skills", ref: "main", subdir: "skills"},
		{in: "git+https://github.com/anthropics/skills", url: "https://github.com/anthropics/skills"},
		{in: "git+https://host/org/repo.git@feature/x", url: "https://host/org/repo.git", ref: "feature/x"},
		{in: "git+ssh://git@github.com/org/repo.git@v1.2.0#a/b/", url: "ssh://git@github.com/org/repo.git", ref: "v1.2.0", subdir: "a/b"},
		{in: "git+git://127.0.0.1:9418/repo.git", url: "git://127.0.0.1:9418/repo.git"},
		{in: "git+file:///srv/git/repo.git@0123456789abcdef0123456789abcdef01234567", url: "file:///srv/git/repo.git", ref: "0123456789abcdef0123456789abcdef01234567"},
		{in: "git+http://127.0.0.1:8080/repo.git#.", url: "http://127.0.0.1:8080/repo.git"},
		{in: "https://github.com/org/repo", err: `starts with "git+"`},
		{in: "git+ftp://host/repo", err: `scheme "ftp"`},
		{in: "git+git@github.com:org/repo.git", err: "scp-style"},
		{in: "git+https://user:hunter2@host/repo", err: "holds a password"},
		{in: "git+https://host", err: "no repository path"},
		{in: "git+https:///repo", err: "no host"},
		{in: "git+file://otherhost/repo", err: "local path"},
		{in: "git+https://host/repo@", err: "empty"},
		{in: "git+https://host/repo@a..b", err: "not a valid git ref"},
		{in: "git+https://host/repo@-rf", err: "not a valid git ref"},
		{in: "git+https://host/repo@a b", err: "space or control"},
		{in: "git+https://host/repo@x#../etc", err: "plain relative path"},
		{in: "git+https://host/repo?x=1", err: "query"},
		{in: "git+https://host/" + strings.Repeat("a", gitspec.MaxSpecLength), err: "longer than"},
	} {
		sp, err := gitspec.ParseSpec(tc.in)
		if tc.err != "" {
			if err == nil || !errors.Is(err, gitspec.ErrBadSpec) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSpec(%.60q) = %+v, %v; want an error containing %q", tc.in, sp, err, tc.err)
			}
			if strings.Contains(tc.in, "hunter2") && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the password is echoed: %v", err)
			}
			continue
		}
		if err != nil || sp.URL != tc.url || sp.Ref != tc.ref || sp.Subdir != tc.subdir {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %q %q %q", tc.in, sp, err, tc.url, tc.ref, tc.subdir)
			continue
		}
		// String round-trips.
		again, err := gitspec.ParseSpec(sp.String())
		if err != nil || again != sp {
			t.Errorf("ParseSpec(%q.String() = %q) = %+v, %v", tc.in, sp.String(), again, err)
		}
	}
}

// FuzzParseSpec checks that any input either parses into a spec that
// round-trips through String, or fails with ErrBadSpec; never a panic, and
// never a password kept in the URL.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"git+https://github.com/anthropics/skills@main#skills",
		"git+ssh://git@host/org/r.git@v1#a",
		"git+file:///tmp/r.git@0123456789abcdef0123456789abcdef01234567",
		"git+https://u:p@h/r", "git+git@h:r", "git+https://h/r@a@b#c#d", "git+http://[::1]:80/r",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := gitspec.ParseSpec(s)
		if err != nil {
			if !errors.Is(err, gitspec.ErrBadSpec) {
				t.Fatalf("error not wrapping ErrBadSpec: %v", err)
			}
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if strings.Contains(sp.URL, ":@") {
			t.Fatalf("URL %q", sp.URL)
		}
		again, err := gitspec.ParseSpec(sp.String())
		if err != nil || again != sp {
			t.Fatalf("%q parsed to %+v, whose String %q parses to %+v, %v", s, sp, sp.String(), again, err)
		}
	})
}
