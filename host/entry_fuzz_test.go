package host

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/wire"
)

// digestOracle is the digest rule written independently of skillclient.ValidDigest.
var digestOracle = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// FuzzDecodeEntry feeds arbitrary bytes to the entry decoder and checks
// the contract of whatever it accepts: a valid SKILL.md URI whose last
// segment is the frontmatter name, and a manifest of unique, valid URIs
// inside the skill root with well-formed digests, non-negative sizes, and
// a decline whenever the limits are exceeded. Seeds are in
// testdata/fuzz/FuzzDecodeEntry. A missing size is accepted as
// SizeUnknown; a present one must be a non-negative integer.
func FuzzDecodeEntry(f *testing.F) {
	f.Add([]byte(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"d"},"resources":"dynamic"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := DecodeEntry("o", raw)
		if err != nil {
			return
		}
		sk, perr := skilluri.ParseSkill(e.URI)
		if perr != nil || sk.Name != e.Name || e.Frontmatter.Name() != e.Name || sk.Root != e.Root {
			t.Fatalf("accepted entry with bad identity: %+v (%v)", e, perr)
		}
		if e.Dynamic {
			if e.Files != nil {
				t.Fatal("dynamic entry with files")
			}
			return
		}
		seen := map[string]bool{}
		var total int64
		over := len(e.Files) > wire.MaxResources
		hasSkill := false
		for _, r := range e.Files {
			if seen[r.URI] {
				t.Fatalf("duplicate %q accepted", r.URI)
			}
			seen[r.URI] = true
			if r.URI == e.URI {
				hasSkill = true
			} else if _, ok := skilluri.Within(e.Root, r.URI); !ok {
				t.Fatalf("%q outside %s accepted", r.URI, e.Root)
			}
			if _, err := skilluri.Parse(r.URI); err != nil {
				t.Fatalf("invalid URI accepted: %v", err)
			}
			if !digestOracle.MatchString(r.Digest) || (r.Size < 0 && r.Size != SizeUnknown) {
				t.Fatalf("bad digest or size accepted: %+v", r)
			}
			if r.Size == SizeUnknown {
				continue
			}
			if r.Size > wire.MaxTotalBytes || total > wire.MaxTotalBytes-r.Size {
				over = true
			} else {
				total += r.Size
			}
		}
		if !hasSkill {
			t.Fatal("manifest without SKILL.md accepted")
		}
		if over != (e.Declined != nil) {
			t.Fatalf("over limits = %v but Declined = %v", over, e.Declined)
		}
	})
}

// TestEntryValidatorSeeds pins the decoding of a nested, valid entry.
func TestEntryValidatorSeeds(t *testing.T) {
	ok := `{"uri":"skill://acme/billing/refunds/SKILL.md","frontmatter":{"name":"refunds","description":"d","metadata":{"v":"1"}},"resources":[{"uri":"skill://acme/billing/refunds/SKILL.md","digest":"sha256:` + strings.Repeat("0", 64) + `","size":0}]}`
	e, err := DecodeEntry("o", []byte(ok))
	if err != nil || e.Path != "acme/billing/refunds" || e.Declined != nil {
		t.Fatalf("DecodeEntry = %+v, %v", e, err)
	}
	if !json.Valid([]byte(ok)) {
		t.Fatal("seed is not JSON")
	}
}
