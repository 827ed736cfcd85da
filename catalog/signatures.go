package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	"github.com/skillport/skillport/internal/sigfile"
	"github.com/skillport/skillport/skill"
)

// RuleSignature is the rule of a signature bundle the catalog could not
// attach (unreadable, over the size limit, or not JSON).
const RuleSignature = "signature"

// attachSignatures sets each skill's Signature of c, a catalog not yet
// handed out, from the source's sigfile.Dir. The bundles are kept beside
// the skills, in a dot-folder the walk never publishes, so they are read
// here by path. Skills, the skill list and the diagnostics may be shared
// with the previous snapshot, so a skill whose bundle changed is copied
// and the shared slices and map are cloned, never modified.
func attachSignatures(c *Catalog, fsys fs.FS) {
	if fsys == nil {
		return
	}
	_, statErr := fs.Stat(fsys, sigfile.Dir)
	var skills []*Skill
	var diags []Diagnostic
	for i, s := range c.skills {
		var sig []byte
		if statErr == nil {
			b, err := sigfile.Read(fsys, s.Dir)
			switch {
			case err != nil:
				diags = append(diags, signatureDiag(s, err))
			case b != nil && !json.Valid(b):
				diags = append(diags, signatureDiag(s, fmt.Errorf("%s is not JSON; sign the skill again", sigfile.Path(s.Dir))))
			default:
				sig = b
			}
		}
		if bytes.Equal(sig, s.Signature) {
			continue
		}
		if skills == nil {
			skills = slices.Clone(c.skills)
		}
		ns := *s
		ns.Signature = sig
		skills[i] = &ns
	}
	stale := slices.ContainsFunc(c.diags, func(d Diagnostic) bool { return d.Rule == RuleSignature })
	if stale || diags != nil {
		// A reused snapshot carries the last build's signature diagnostics.
		kept := slices.DeleteFunc(slices.Clone(c.diags), func(d Diagnostic) bool { return d.Rule == RuleSignature })
		c.diags = append(kept, diags...)
	}
	if skills == nil {
		return
	}
	c.skills = skills
	c.byURI = maps.Clone(c.byURI)
	for _, s := range skills {
		c.byURI[s.URI] = s
	}
	c.id = catalogID(c)
}

func signatureDiag(s *Skill, err error) Diagnostic {
	return Diagnostic{Path: sigfile.Path(s.Dir), Skill: s.Dir, Rule: RuleSignature, Severity: skill.Warning, Err: err,
		Message: fmt.Sprintf("signature bundle not attached: %v", err)}
}
