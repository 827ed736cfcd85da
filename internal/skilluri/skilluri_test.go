package skilluri

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := []string{
		"skill://git-workflow/SKILL.md",
		"skill://acme/billing/refunds/SKILL.md",
		"skill://pdf-processing/references/FORMS.md",
		"github://owner/repo/skills/refunds/SKILL.md",
		"skill://a/b%20c/SKILL.md",
	}
	for _, s := range good {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q) = %v, want ok", s, err)
		}
	}
	// Each bad case names the checklist row it covers.
	bad := map[string]string{
		"skill://x/../y/SKILL.md":                            "A-1 dot segment",
		"skill://x/a/../../etc/passwd":                       "A-1",
		"skill://x/%2e%2e/SKILL.md":                          "A-2 encoded dots",
		"skill://x/%2E%2e/SKILL.md":                          "A-2",
		"skill://x/.%2e/SKILL.md":                            "A-2",
		"skill://%2e%2e/SKILL.md":                            "A-2 in authority",
		"skill://x/a%2Fb/SKILL.md":                           "A-3 encoded slash",
		"skill://x/a%5Cb/SKILL.md":                           "A-3 encoded backslash",
		`skill://x/a\..\b`:                                   "A-4 backslash",
		"skill:///etc/passwd":                                "A-5 empty authority",
		"skill:x/SKILL.md":                                   "A-5 opaque",
		"skill://u@x/SKILL.md":                               "A-6 userinfo",
		"skill://x:80/SKILL.md":                              "A-6 port",
		"skill://x/SKILL.md?q":                               "A-6 query",
		"skill://x/SKILL.md#f":                               "A-6 fragment",
		"skill://x//SKILL.md":                                "A-7 empty segment",
		"skill://x/templates/":                               "A-7 trailing slash",
		"skill://x/a%00/SKILL.md":                            "A-8 NUL",
		"skill://x/a\n/SKILL.md":                             "A-8 newline",
		"skill://x/a%0a/SKILL.md":                            "A-8 encoded newline",
		"skill://x/" + strings.Repeat("a", 2100):             "A-9 too long",
		"skill://x/" + strings.Repeat("a/", 70) + "SKILL.md": "A-9 too many segments",
		"file:///etc/passwd":                                 "A-12 file",
		"file:/etc/passwd":                                   "A-12 file opaque",
		"https://evil.example/SKILL.md":                      "A-12 https",
		"javascript:alert(1)":                                "A-12 javascript",
		"skill://x":                                          "no path",
		"skill://x/ü/SKILL.md":                               "non-ASCII",
		"":                                                   "empty",
	}
	for s, why := range bad {
		if _, err := Parse(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Parse(%q) = %v, want ErrInvalid", why, s, err)
		}
		if err := Check(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Check(%q) = %v, want ErrInvalid", why, s, err)
		}
	}
	for _, s := range good {
		if err := Check(s); err != nil {
			t.Errorf("Check(%q) = %v, want ok", s, err)
		}
	}
}

// TestCheckAllocates nothing for a valid URI without escapes: it runs for
// every file of every listed skill.
func TestCheckAllocates(t *testing.T) {
	uri := "skill://acme/billing/refunds/references/policy.md"
	if n := testing.AllocsPerRun(100, func() { _ = Check(uri) }); n != 0 {
		t.Errorf("Check allocates %v times per call, want 0", n)
	}
}

// TestParseSkillPathIsCapped: the path ParseSkill returns shares an array
// with the parsed URI; appending to it must not write over anything.
func TestParseSkillPathIsCapped(t *testing.T) {
	sk, err := ParseSkill("skill://acme/billing/refunds/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(sk.Path) != cap(sk.Path) {
		t.Errorf("Path has room to grow into (len %d, cap %d)", len(sk.Path), cap(sk.Path))
	}
	if strings.Join(sk.Path, "/") != "acme/billing/refunds" || sk.Name != "refunds" {
		t.Errorf("ParseSkill = %+v", sk)
	}
}

func TestParseSkill(t *testing.T) {
	s, err := ParseSkill("skill://acme/billing/refunds/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	if s.Root != "skill://acme/billing/refunds" || s.Name != "refunds" || strings.Join(s.Path, "/") != "acme/billing/refunds" {
		t.Errorf("got %+v", s)
	}
	s, err = ParseSkill("skill://git-workflow/SKILL.md")
	if err != nil || s.Name != "git-workflow" || s.Root != "skill://git-workflow" {
		t.Errorf("got %+v, %v", s, err)
	}
	for _, u := range []string{"skill://x/skill.md", "skill://x/README.md", "skill://x/SKILL.md/more"} {
		if _, err := ParseSkill(u); !errors.Is(err, ErrNotSkill) {
			t.Errorf("ParseSkill(%q) = %v, want ErrNotSkill", u, err)
		}
	}
}

func TestResolve(t *testing.T) {
	const root = "skill://acme/billing/refunds"
	cases := []struct {
		ref, want string
		err       error
	}{
		{"references/GUIDE.md", root + "/references/GUIDE.md", nil},
		{"./references/GUIDE.md", root + "/references/GUIDE.md", nil},
		{"references/../SKILL.md", root + "/SKILL.md", nil},
		{"templates/", root + "/templates", nil},
		{"", root, nil},
		{".", root, nil},
		{root + "/examples/email.md", root + "/examples/email.md", nil},
		// Resolution hazards: each would leave the root under naive resolution.
		{"../../other-skill/SKILL.md", "", ErrOutsideRoot},
		{"../sibling/x.md", "", ErrOutsideRoot},
		{"../../../../etc/passwd", "", ErrOutsideRoot},
		{"/etc/passwd", "", ErrOutsideRoot},
		{"//other/SKILL.md", "", ErrOutsideRoot},
		{"file:/etc/passwd", "", ErrInvalid},
		{"file:///etc/passwd", "", ErrInvalid},
		{"skill://other/SKILL.md", "", ErrOutsideRoot},
		{"skill://acme/billing/refunds-evil/SKILL.md", "", ErrOutsideRoot},
		{"%2e%2e/x", "", ErrInvalid},
		{`a\b`, "", ErrInvalid},
		{"a//b", "", ErrInvalid},
		{"a?x", "", ErrInvalid},
	}
	for _, c := range cases {
		got, err := Resolve(root, c.ref)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("Resolve(%q) = %q, %v; want %v", c.ref, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.ref, got, err, c.want)
		}
	}
}

func TestWithin(t *testing.T) {
	if rel, ok := Within("skill://a/b", "skill://a/b/c/d.md"); !ok || rel != "c/d.md" {
		t.Errorf("Within = %q %v", rel, ok)
	}
	for _, u := range []string{"skill://a/bc/d.md", "skill://a/b", "skill://a/b/", "skill://a/x"} {
		if _, ok := Within("skill://a/b", u); ok {
			t.Errorf("Within(%q) = true", u)
		}
	}
}

func TestHasScheme(t *testing.T) {
	for s, want := range map[string]bool{"skill://x": true, "file:/x": true, "C:\\x": true, "a/b:c": false, ":x": false, "1a:x": false, "x": false} {
		if HasScheme(s) != want {
			t.Errorf("HasScheme(%q) != %v", s, want)
		}
	}
}

// FuzzResolve checks the resolver's contract: whatever the reference, a
// result is a valid URI strictly inside the root (or the root itself).
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"references/GUIDE.md", "../../other-skill/SKILL.md", "a/./b/../c", "%2e%2e/x", "skill://acme/x/SKILL.md", "//x", "a/b/"} {
		f.Add(s)
	}
	const root = "skill://acme/refunds"
	f.Fuzz(func(t *testing.T, ref string) {
		got, err := Resolve(root, ref)
		if err != nil {
			return
		}
		if got == root {
			return
		}
		if _, ok := Within(root, got); !ok {
			t.Fatalf("Resolve(%q) = %q, outside %s", ref, got, root)
		}
		u, err := Parse(got)
		if err != nil {
			t.Fatalf("Resolve(%q) = %q, which does not parse: %v", ref, got, err)
		}
		for _, s := range u.Segments {
			if s == "." || s == ".." || s == "" || strings.ContainsAny(s, "/\\\x00") {
				t.Fatalf("Resolve(%q) = %q has segment %q", ref, got, s)
			}
		}
	})
}

// FuzzParse checks that Parse never panics, that Check gives the same
// verdict, and that an accepted URI has no decoded segment that could
// climb or hide a separator.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"skill://a/SKILL.md", "skill://x/%2e%2e/y", "skill://u@x:1/a?b#c", "file:///etc/passwd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := Parse(raw)
		if cerr := Check(raw); (cerr == nil) != (err == nil) || (err != nil && cerr.Error() != err.Error()) {
			t.Fatalf("Check(%q) = %v, Parse = %v", raw, cerr, err)
		}
		if err != nil {
			return
		}
		if u.Raw != raw || u.Authority == "" || len(u.Segments) == 0 {
			t.Fatalf("Parse(%q) = %+v", raw, u)
		}
		for _, s := range u.Segments {
			if s == "." || s == ".." || s == "" || strings.ContainsAny(s, "/\\\x00") {
				t.Fatalf("Parse(%q) accepted segment %q", raw, s)
			}
		}
		// Segments are the raw ones as net/url decodes them.
		_, path, _ := strings.Cut(strings.SplitN(raw, "://", 2)[1], "/")
		for i, rs := range strings.Split(path, "/") {
			if d, err := url.PathUnescape(rs); err != nil || d != u.Segments[i] {
				t.Fatalf("Parse(%q): segment %d is %q, net/url decodes %q as %q (%v)", raw, i, u.Segments[i], rs, d, err)
			}
		}
	})
}
