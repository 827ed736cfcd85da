package skill

import (
	"slices"
	"testing"
	"time"
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

// BenchmarkFrontmatterGet prices what Lean trades for its memory: a field
// other than name and description is decoded from the JSON when read
// (lean-x-full: the ratio of a lean Get to a decoded one, in the same run).
func BenchmarkFrontmatterGet(b *testing.B) {
	doc, err := Parse([]byte("---\nname: pdf\ndescription: Fill and sign PDF forms.\nlicense: MIT\nallowed-tools: [Read, Write]\n" +
		"metadata:\n  openclaw: {emoji: \"🔷\", homepage: \"https://example.com\"}\n  version: \"1.2\"\n---\n"))
	if err != nil {
		b.Fatal(err)
	}
	full, lean := doc.Frontmatter, doc.Frontmatter.Lean()
	per := func(f Frontmatter) float64 {
		start := time.Now()
		for range 20000 {
			if _, ok := f.Get("metadata"); !ok {
				b.Fatal("no metadata")
			}
			f.Description()
		}
		return float64(time.Since(start).Nanoseconds()) / 20000
	}
	var fullNs, leanNs float64
	for b.Loop() {
		fullNs += per(full)
		leanNs += per(lean)
	}
	b.ReportMetric(fullNs/float64(b.N), "full-ns/get")
	b.ReportMetric(leanNs/float64(b.N), "lean-ns/get")
	b.ReportMetric(leanNs/fullNs, "lean-x-full")
}
