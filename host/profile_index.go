//go:build !skillport_no_index

package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/wire"
)

// ProfileIndex is a server publishing skill://index.json: the digest
// covers SKILL.md only.
const ProfileIndex = "index"

// unverifiedIndex is the note set in Entry.Unverified.
const unverifiedIndex = "listed by skill://index.json: its digest covers SKILL.md only, so the supporting files cannot be verified"

// The index profile reads any server with resources through
// skill://index.json (seed 002); the core reads each SKILL.md, and check
// verifies it.
func init() {
	registerProfile(hostProfile{
		name: ProfileIndex,
		rank: 2,
		pick: func(_ mcp.Connection, caps *mcp.ServerCapabilities) bool {
			return caps != nil && caps.Resources != nil
		},
		list:  (*originState).listIndex,
		check: (*Entry).checkIndexDigest,
	})
}

// listIndex reads skill://index.json (seed 002). Entries are "dynamic"
// (no complete manifest): declined unless the host allows such skills,
// never persistently approved; the SKILL.md digest is still checked on load.
func (o *originState) listIndex(ctx context.Context, sess *mcp.ClientSession) ([]*Entry, error) {
	callCtx, cancel := context.WithTimeout(ctx, o.h.opts.CallTimeout)
	defer cancel()
	res, err := sess.ReadResource(callCtx, &mcp.ReadResourceParams{URI: wire.IndexURI})
	if err != nil {
		return nil, fmt.Errorf("the server does not declare the Skills extension and %s cannot be read: %v", wire.IndexURI, err)
	}
	if len(res.Contents) != 1 || res.Contents[0] == nil || res.Contents[0].URI != wire.IndexURI {
		return nil, fmt.Errorf("%s: expected exactly one content item for the index", wire.IndexURI)
	}
	c := res.Contents[0]
	data := []byte(c.Text)
	if c.Text == "" {
		data = c.Blob
	}
	entries, notes, err := decodeIndex(o.cfg.Label, data, o.h.opts.MaxEntries)
	if err != nil {
		return nil, err
	}
	for _, d := range notes {
		if d.Refused {
			o.refuse(d)
		} else {
			o.diag(d.Severity, d.URI, d.Message, d.Err)
		}
	}
	for _, e := range entries {
		o.ingest(e)
	}
	return entries, nil
}

// decodeIndex turns the content of skill://index.json into registry
// entries of origin label, at most max of them. What is left out (entries
// of other types, invalid or repeated ones, those past max) is returned as
// notes; only content that is not an index at all is an error.
func decodeIndex(label string, data []byte, max int) ([]*Entry, []Diagnostic, error) {
	var ix struct {
		Skills []json.RawMessage `json:"skills"`
	}
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, nil, fmt.Errorf("%s is not a JSON index: %v", wire.IndexURI, err)
	}
	if ix.Skills == nil {
		return nil, nil, fmt.Errorf("%s has no skills array; it is not a skills index", wire.IndexURI)
	}
	var out []*Entry
	var notes []Diagnostic
	note := func(uri, msg string, err error) {
		notes = append(notes, Diagnostic{Origin: label, URI: uri, Severity: Warning, Message: msg, Err: err})
	}
	// leftOut notes an entry that is a skill the host does not take.
	leftOut := func(uri, msg string, err error) {
		notes = append(notes, Diagnostic{Origin: label, URI: uri, Severity: Warning, Message: msg, Err: err, Refused: true})
	}
	seen := map[string]bool{}
	for i, raw := range ix.Skills {
		if len(out) >= max {
			note("", fmt.Sprintf("index capped at %d entries", max), nil)
			break
		}
		var ie wire.IndexEntry
		if err := json.Unmarshal(raw, &ie); err != nil {
			leftOut("", fmt.Sprintf("index entry %d is not an entry object; left out", i), err)
			continue
		}
		if ie.Type != wire.IndexTypeSkillMD {
			note(ie.URL, fmt.Sprintf("index entry %d has type %q; only %q entries are skills this host can load", i, clip(ie.Type), wire.IndexTypeSkillMD), nil)
			continue
		}
		if ie.Digest != "" && !skillclient.ValidDigest(ie.Digest) {
			leftOut(ie.URL, fmt.Sprintf("index entry left out: digest %q is not sha256: and 64 lowercase hex digits", clip(ie.Digest)), nil)
			continue
		}
		fm, err := indexFrontmatter(ie)
		if err != nil {
			leftOut(ie.URL, "index entry left out: "+err.Error(), err)
			continue
		}
		e, err := ValidateEntry(label, &wire.Skill{URI: ie.URL, Frontmatter: fm, Resources: &wire.Resources{Dynamic: true}})
		if err != nil {
			leftOut(entryURI(err), "index entry left out: "+entryMsg(err), err)
			continue
		}
		if seen[e.URI] {
			note(e.URI, "listed twice in the index; the first entry is kept", nil)
			continue
		}
		seen[e.URI] = true
		e.Profile, e.Unverified, e.mdDigest = ProfileIndex, unverifiedIndex, ie.Digest
		out = append(out, e)
	}
	return out, notes, nil
}

// indexFrontmatter is the entry's verbatim frontmatter when the index has
// it (then it must agree with name and description), else name and
// description alone.
func indexFrontmatter(ie wire.IndexEntry) (skill.Frontmatter, error) {
	var fm skill.Frontmatter
	if len(ie.Frontmatter) > 0 {
		if err := fm.UnmarshalJSON(ie.Frontmatter); err != nil {
			return fm, err
		}
		if fm.Name() != ie.Name || fm.Description() != ie.Description {
			return fm, errors.New("name or description differs from the entry's frontmatter")
		}
		return fm, nil
	}
	return skill.FrontmatterFromMap([]string{"name", "description"}, map[string]any{"name": ie.Name, "description": ie.Description})
}

// checkIndexDigest verifies a SKILL.md fetched for an index entry against
// the index's digest, the one thing the index lets a host verify.
func (e *Entry) checkIndexDigest(data []byte) error {
	if e.Profile != ProfileIndex || e.mdDigest == "" {
		return nil
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != e.mdDigest {
		return &VerificationError{Origin: e.Origin, URI: e.URI, Reason: ReasonDigest, Detail: "SKILL.md does not match the digest in " + wire.IndexURI}
	}
	return nil
}
