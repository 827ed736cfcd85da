package catalog

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/skillport/skillport/internal/skilltest"
	"github.com/skillport/skillport/skill"
)

// TestCollisionsFewAndMany checks that sibling directories mapping to one
// URI segment are refused alike whether their parent has a few
// subdirectories (compared pairwise) or many (through a map): every skill
// is refused, each message naming the first directory with that segment.
func TestCollisionsFewAndMany(t *testing.T) {
	for _, fillers := range []int{0, 20} {
		t.Run(fmt.Sprint(fillers, " fillers"), func(t *testing.T) {
			files := map[string]string{
				"a1/SKILL.md": md("same", "d"),
				"a2/SKILL.md": md("same", "d"),
				"a3/SKILL.md": md("same", "d"),
			}
			for i := range fillers {
				name := fmt.Sprintf("filler-%02d", i)
				files[name+"/SKILL.md"] = md(name, "d")
			}
			c, err := OpenDir(skilltest.WriteTree(t, files), &Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range c.Diagnostics() {
				if d.Rule == RuleDuplicate {
					got = append(got, d.Path+": "+d.Message)
				}
			}
			want := []string{
				`a1: "a1" and "a2" would both be published at skill://same; rename one of them (neither is published)`,
				`a2: "a1" and "a2" would both be published at skill://same; rename one of them (neither is published)`,
				`a3: "a1" and "a3" would both be published at skill://same; rename one of them (neither is published)`,
			}
			if !slices.Equal(got, want) {
				t.Errorf("duplicate diagnostics:\n%q\nwant\n%q", got, want)
			}
			if st := c.Stats(); st.Skills != fillers || st.Invalid != 3 {
				t.Errorf("published %d, refused %d; want %d and 3", st.Skills, st.Invalid, fillers)
			}
		})
	}
}

// TestUnicodeTwins: two names that differ only in Unicode normalization
// ("café" in NFC and NFD) look the same on every page, yet are different
// bytes and URIs. Like case twins that share a URI, they are refused, the
// finding naming both: folders above skills, folders inside one, and files.
func TestUnicodeTwins(t *testing.T) {
	const nfc, nfd = "caf\u00e9", "cafe\u0301"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // the finding, with both paths
	}{
		{"prefix folders", map[string]string{
			"team/" + nfc + "/a/SKILL.md": md("a", "d"),
			"team/" + nfd + "/b/SKILL.md": md("b", "d"),
		}, "differ only in Unicode normalization"},
		{"folders in a skill", map[string]string{
			"s/SKILL.md":             md("s", "d"),
			"s/" + nfc + "/notes.md": "1",
			"s/" + nfd + "/notes.md": "2",
		}, "differ only in Unicode normalization"},
		{"files in a skill", map[string]string{
			"s/SKILL.md":       md("s", "d"),
			"s/" + nfc + ".md": "1",
			"s/" + nfd + ".md": "2",
		}, "differ only in Unicode normalization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := OpenDir(skilltest.WriteTree(t, tc.files), &Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, d := range c.Diagnostics() {
				if d.Rule == RuleDuplicate && d.Severity == skill.Error {
					found = true
					if !strings.Contains(d.Message, tc.want) || !strings.Contains(d.Message, nfc) || !strings.Contains(d.Message, nfd) {
						t.Errorf("finding: %s", d.Message)
					}
				}
			}
			if !found {
				t.Errorf("no finding; diagnostics %+v", c.Diagnostics())
			}
			// Nothing left serves the two names as twins.
			seen := map[string]string{}
			for _, sk := range c.Skills() {
				for _, f := range sk.Files {
					k := norm.NFC.String(f.Path)
					if o, dup := seen[k]; dup && o != f.Path {
						t.Errorf("both %q and %q are published", o, f.Path)
					}
					seen[k] = f.Path
				}
			}
		})
	}
}
