//go:build !skillport_no_index

package host

import (
	"strconv"
	"strings"
	"testing"

	"github.com/skillport/skillport/wire"
)

// fuzzIndexMax is the entry cap the index fuzz target decodes under, small
// so that the fuzzer reaches it.
const fuzzIndexMax = 4

// FuzzIndexEntries decodes arbitrary skill://index.json content: it never
// panics, accepts at most the cap, every accepted entry is a valid
// skill-md entry with a well-formed digest (or none), each URI once, and
// an error comes with no entries.
func FuzzIndexEntries(f *testing.F) {
	d := "sha256:" + strings.Repeat("ab", 32)
	f.Add([]byte(`{"$schema":"` + wire.IndexSchema + `","skills":[{"name":"pdf","type":"skill-md","description":"PDF forms.","url":"skill://pdf/SKILL.md","digest":"` + d + `"}]}`))
	f.Add([]byte(`{"skills":[{"name":"refunds","type":"skill-md","description":"d","url":"skill://acme/billing/refunds/SKILL.md","frontmatter":{"name":"refunds","description":"d","metadata":{"v":"1"}}}]}`))
	f.Add([]byte(`{"skills":[{"name":"a","type":"archive","description":"d","url":"skill://a/SKILL.md"},{"name":"a","type":"skill-md","description":"d","url":"skill://a/SKILL.md"},{"name":"a","type":"skill-md","description":"d","url":"skill://a/SKILL.md"}]}`))
	f.Add([]byte(`{"skills":[{"name":"b","type":"skill-md","description":"d","url":"skill://a/SKILL.md"},{"name":"..","type":"skill-md","description":"d","url":"skill://%2e%2e/SKILL.md"},7,null]}`))
	f.Add([]byte(`{"skills":[{"name":"a","type":"skill-md","description":"d","url":"skill://a/SKILL.md","digest":"sha256:XYZ"},{"name":"a","type":"skill-md","description":"x","url":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"y"}}]}`))
	f.Add([]byte(`{"skills":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, notes, err := decodeIndex("o", data, fuzzIndexMax)
		if err != nil {
			if entries != nil || notes != nil {
				t.Fatalf("error %v with %d entries", err, len(entries))
			}
			return
		}
		if len(entries) > fuzzIndexMax {
			t.Fatalf("%d entries accepted past the cap of %d", len(entries), fuzzIndexMax)
		}
		seen := map[string]bool{}
		for _, e := range entries {
			checkLegacyEntry(t, e)
			if seen[e.URI] {
				t.Fatalf("%q accepted twice", e.URI)
			}
			seen[e.URI] = true
			if e.Profile != ProfileIndex || e.Unverified != unverifiedIndex {
				t.Fatalf("index entry not marked: %q %q", e.Profile, e.Unverified)
			}
			if e.mdDigest != "" && !digestOracle.MatchString(e.mdDigest) {
				t.Fatalf("malformed digest %q accepted", e.mdDigest)
			}
		}
		for _, n := range notes {
			if n.Origin != "o" || n.Message == "" || n.Severity != Warning {
				t.Fatalf("bad note %+v", n)
			}
		}
	})
}

// TestIndexDecoderExamples pins what the index decoder makes of the cases
// its fuzz target starts from.
func TestIndexDecoderExamples(t *testing.T) {
	d := "sha256:" + strings.Repeat("0", 64)
	var items []string
	for i := range 6 {
		items = append(items, `{"name":"s`+strconv.Itoa(i)+`","type":"skill-md","description":"d","url":"skill://s`+strconv.Itoa(i)+`/SKILL.md","digest":"`+d+`"}`)
	}
	items = append([]string{`{"name":"s0","type":"skill-md","description":"d","url":"skill://s0/SKILL.md","digest":"sha256:ABC"}`, `7`}, items...)
	items = append(items[:3], append([]string{items[2]}, items[3:]...)...) // s0 twice
	entries, notes2, err := decodeIndex("o", []byte(`{"skills":[`+strings.Join(items, ",")+`]}`), fuzzIndexMax)
	if err != nil || len(entries) != fuzzIndexMax || entries[0].Name != "s0" || entries[0].mdDigest != d {
		t.Fatalf("index: %d entries, %v", len(entries), err)
	}
	var msgs []string
	for _, n := range notes2 {
		msgs = append(msgs, n.Message)
	}
	for _, want := range []string{"digest \"sha256:ABC\"", "index entry 1 is not an entry object", "listed twice", "capped at 4"} {
		if !strings.Contains(strings.Join(msgs, "\n"), want) {
			t.Errorf("no note %q in %q", want, msgs)
		}
	}
	if _, _, err := decodeIndex("o", []byte(`{"$schema":"x"}`), fuzzIndexMax); err == nil {
		t.Error("content without skills[] accepted as an index")
	}
}
