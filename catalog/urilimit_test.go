package catalog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/skilluri"
)

// TestPublisherAndHostAgreeOnURILength is issue 27's fourth point: the
// server published skills whose URIs hosts refuse (over 2,048 bytes), so
// a skill vanished between serve and pull. The publisher now refuses it,
// with a diagnostic, at one byte over the limit hosts apply, and publishes
// it at the limit; build and check (validate) agree.
func TestPublisherAndHostAgreeOnURILength(t *testing.T) {
	for _, tc := range []struct {
		name      string
		uriLength int
		published bool
	}{
		{"at the limit", catalog.MaxURILength, true},
		{"one byte over", catalog.MaxURILength + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write := func(rel, content string) {
				p := filepath.Join(root, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("ok/SKILL.md", "---\nname: ok\ndescription: Fine.\n---\nBody\n")
			write("s/SKILL.md", "---\nname: s\ndescription: Deep.\n---\nBody\n")
			// skill://s/ + nine 200-byte folders + a file: 1,819 bytes and the name.
			dirs := strings.TrimSuffix(strings.Repeat(strings.Repeat("a", 200)+"/", 9), "/")
			file := "s/" + dirs + "/" + strings.Repeat("f", tc.uriLength-1819)
			write(file, "x")
			uri := "skill://" + file
			if len(uri) != tc.uriLength {
				t.Fatalf("test URI is %d bytes, want %d", len(uri), tc.uriLength)
			}
			if hostOK := skilluri.Check(uri) == nil; hostOK != tc.published {
				t.Fatalf("skilluri.Check(%d bytes) accepts = %v", len(uri), hostOK)
			}

			c, err := catalog.OpenDir(root, nil)
			if err != nil {
				t.Fatal(err)
			}
			published := map[string]bool{}
			for _, s := range c.Skills() {
				published[s.Name] = true
				for _, f := range s.Files {
					if err := skilluri.Check(f.URI); err != nil {
						t.Errorf("published a URI hosts refuse: %v", err)
					}
				}
			}
			if !published["ok"] || published["s"] != tc.published {
				t.Fatalf("published %v; want ok, and s: %v", published, tc.published)
			}
			report, err := catalog.CheckDir(root, nil)
			if err != nil {
				t.Fatal(err)
			}
			for name, diags := range map[string][]catalog.Diagnostic{"build": c.Diagnostics(), "check": report.Diagnostics} {
				found := false
				for _, d := range diags {
					if errors.Is(d.Err, catalog.ErrURITooLong) && d.Skill == "s" && strings.Contains(d.Message, "2048") {
						found = true
					}
				}
				if found == tc.published {
					t.Errorf("%s: URI-length diagnostic found = %v, want %v: %v", name, found, !tc.published, diags)
				}
			}
			if want := map[bool]int{true: 0, false: 1}[tc.published]; report.Stats.Invalid != want {
				t.Errorf("check counts %d invalid skills, want %d", report.Stats.Invalid, want)
			}
		})
	}
}

// TestPublisherAndHostAgreeOnURISegments: the same agreement for the
// number of segments a URI may have (skill.MaxURISegments).
func TestPublisherAndHostAgreeOnURISegments(t *testing.T) {
	for _, segs := range []int{64, 65} {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "s"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(root, "s", "SKILL.md"), []byte("---\nname: s\ndescription: Deep.\n---\nBody\n"), 0o644)
		// skill://s/d/d/…/f: the authority, segs-2 folders, the file.
		rel := "s/" + strings.Repeat("d/", segs-2) + "f"
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, []byte("x"), 0o644)
		hostOK := skilluri.Check("skill://"+rel) == nil
		c, err := catalog.OpenDir(root, nil)
		if err != nil {
			t.Fatal(err)
		}
		report, err := catalog.CheckDir(root, nil)
		if err != nil {
			t.Fatal(err)
		}
		if published := len(c.Skills()) == 1; published != hostOK || (report.Stats.Invalid == 0) != hostOK {
			t.Errorf("%d segments: host accepts = %v, published = %v, check invalid = %d\n%v", segs, hostOK, published, report.Stats.Invalid, c.Diagnostics())
		}
		if hostOK != (segs <= 64) {
			t.Errorf("%d segments: host accepts = %v", segs, hostOK)
		}
	}
}
