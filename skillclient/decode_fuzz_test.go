package skillclient_test

import (
	"testing"

	"github.com/skillport/skillport/skillclient"
)

// FuzzDecodeEntry feeds arbitrary bytes to the entry decoder every listing
// goes through: it never panics, and whatever it accepts passes
// ValidateEntry and names the skill its URI names. The host's
// FuzzDecodeEntry checks the manifest rules on the same decoder.
func FuzzDecodeEntry(f *testing.F) {
	f.Add([]byte(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"d"},"resources":"dynamic"}`))
	f.Add([]byte(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"d"},"resources":42}`))
	f.Add([]byte(`{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","name":"b","description":"d"},"resources":"dynamic"}`))
	f.Add([]byte(`{"uri":"skill://a/b/SKILL.md","frontmatter":{"name":"b","description":"d"},"resources":[{"uri":"skill://a/b/SKILL.md","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","size":3}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, sk, err := skillclient.DecodeEntry(raw)
		if err != nil {
			return
		}
		if verr := skillclient.ValidateEntry(s); verr != nil {
			t.Fatalf("DecodeEntry accepted an entry ValidateEntry refuses: %v", verr)
		}
		if sk.Name != s.Frontmatter.Name() || sk.Root+"/SKILL.md" != s.URI {
			t.Fatalf("accepted entry names %q at %q, its URI %q", s.Frontmatter.Name(), sk.Root, s.URI)
		}
	})
}
