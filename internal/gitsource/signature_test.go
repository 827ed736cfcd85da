package gitsource_test

import (
	"testing"

	"github.com/skillport/skillport/internal/sigfile"
)

// TestSignatureFromCommit: a git source reads each skill's bundle from the
// commit it serves, and publishes it as no skill file.
func TestSignatureFromCommit(t *testing.T) {
	r := newRemote(t)
	r.commit("signed", map[string]string{
		"pdf/SKILL.md":      skillMD("pdf", "Read PDFs"),
		sigfile.Path("pdf"): `{"bundle":"pdf"}`,
		"docx/SKILL.md":     skillMD("docx", "Read DOCX"),
	})
	r.push("main")
	s := mustOpen(t, "git+"+r.fileURL()+"@main", nil)
	c := s.Catalog()
	if got := string(c.Skill("skill://pdf/SKILL.md").Signature); got != `{"bundle":"pdf"}` {
		t.Fatalf("pdf: signature %q from the commit", got)
	}
	if c.Skill("skill://docx/SKILL.md").Signature != nil {
		t.Fatal("docx has no bundle in the commit but got one")
	}
	for _, sk := range c.Skills() {
		for _, f := range sk.Files {
			if f.Path == sigfile.Path("pdf") {
				t.Fatalf("bundle published as %s", f.URI)
			}
		}
	}
}
