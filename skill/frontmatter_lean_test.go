package skill

import (
	"slices"
	"testing"
)

// A lean frontmatter answers every question as the frontmatter it was made
// from: fields, values, order, JSON and comparisons.
func TestFrontmatterLean(t *testing.T) {
	for _, src := range []string{
		"---\nname: pdf\ndescription: PDFs.\n---\n",
		"---\nname: pdf\ndescription: \"Ünïcode \\u00e9\"\nmetadata:\n  openclaw: {emoji: \"🔷\", n: 5}\nallowed-tools: [Read, Write]\nlicense: MIT\n---\n",
		"---\nname: 5\ndescription: [a, b]\n---\n",
		"---\ndescription: only\n---\n",
		"---\nname: pdf\ndescription: \"\"\n---\n",
	} {
		doc, err := Parse([]byte(src))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		full := doc.Frontmatter
		lean := full.Lean()
		if !lean.lean || lean.keys != nil || lean.values != nil {
			t.Fatalf("%q: Lean kept the decoded fields", src)
		}
		if lean.Lean().raw == nil || !lean.Equal(full) || !full.Equal(lean) || len(lean.Diff(full)) != 0 {
			t.Errorf("%q: lean differs from full: %v", src, lean.Diff(full))
		}
		if !slices.Equal(lean.Keys(), full.Keys()) || lean.Len() != full.Len() || string(lean.JSON()) != string(full.JSON()) {
			t.Errorf("%q: keys %v / %v, JSON %s / %s", src, lean.Keys(), full.Keys(), lean.JSON(), full.JSON())
		}
		if lean.Name() != full.Name() || lean.Description() != full.Description() {
			t.Errorf("%q: name %q, description %q; want %q, %q", src, lean.Name(), lean.Description(), full.Name(), full.Description())
		}
		for _, k := range append(full.Keys(), "absent") {
			lv, lok := lean.Get(k)
			fv, fok := full.Get(k)
			if lok != fok || !equalJSON(lv, fv) {
				t.Errorf("%q: Get(%q) = %v %v, want %v %v", src, k, lv, lok, fv, fok)
			}
		}
	}
}

// LeanPack gives each frontmatter its own fields, whatever its neighbours.
func TestLeanPack(t *testing.T) {
	var fms []Frontmatter
	for _, src := range []string{
		"---\nname: a\ndescription: first\n---\n",
		"---\nname: bb\ndescription: \"second \\u00e9\"\nmetadata: {k: v}\n---\n",
		"---\ndescription: no name\n---\n",
	} {
		doc, err := Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		fms = append(fms, doc.Frontmatter)
	}
	fms = append(fms, Frontmatter{})
	packed := LeanPack(fms)
	for i, f := range fms {
		p := packed[i]
		if !p.Equal(f) || string(p.JSON()) != string(f.JSON()) || p.Name() != f.Name() || p.Description() != f.Description() {
			t.Errorf("%d: %s %q %q, want %s %q %q", i, p.JSON(), p.Name(), p.Description(), f.JSON(), f.Name(), f.Description())
		}
	}
	if raw := packed[0].JSON(); cap(raw) != len(raw) {
		t.Errorf("a packed JSON can be appended to over its neighbour's: cap %d, len %d", cap(raw), len(raw))
	}
}
