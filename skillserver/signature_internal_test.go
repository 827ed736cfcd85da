package skillserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillport/skillport/catalog"
)

// TestEntrySignatureMeta: a signed skill's entry carries its bundle under
// _meta io.skillport/signature; an unsigned one is encoded as before,
// without _meta.
func TestEntrySignatureMeta(t *testing.T) {
	sk, err := catalog.NewSkill("skill://a", map[string][]byte{"SKILL.md": []byte("---\nname: a\ndescription: d\n---\nbody\n")})
	if err != nil {
		t.Fatal(err)
	}
	unsigned, err := json.Marshal(entry(sk))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(unsigned), "_meta") {
		t.Fatalf("unsigned entry has _meta: %s", unsigned)
	}
	signed := *sk
	signed.Signature = []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`)
	got, err := json.Marshal(entry(&signed))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(string(unsigned), "}") + `,"_meta":{"io.skillport/signature":{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}}}`
	if string(got) != want {
		t.Fatalf("signed entry\n got %s\nwant %s", got, want)
	}
}
