package catalog

import (
	"fmt"
	"slices"
	"testing"

	"github.com/skillport/skillport/internal/skilltest"
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
