package host

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillport/skillport/internal/skilluri"
)

// checkLegacyEntry asserts what any accepted compatibility-profile entry
// must satisfy: a valid SKILL.md URI whose last segment is the name, which
// the frontmatter carries with a non-empty description within the limit;
// "dynamic", without files.
func checkLegacyEntry(t *testing.T, e *Entry) {
	t.Helper()
	sk, err := skilluri.ParseSkill(e.URI)
	if err != nil || sk.Name != e.Name || sk.Root != e.Root || e.Frontmatter.Name() != e.Name {
		t.Fatalf("accepted entry with bad identity: %+v (%v)", e, err)
	}
	d := e.Description()
	if strings.TrimSpace(d) == "" || utf8.RuneCountInString(d) > MaxDescription {
		t.Fatalf("accepted description %q", clip(d))
	}
	if !e.Dynamic || e.Files != nil || e.Size != 0 || e.Kind != KindMCP || e.Origin != "o" {
		t.Fatalf("accepted entry is not a dynamic MCP entry: %+v", e)
	}
}
