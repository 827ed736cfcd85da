package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/wire"
)

// Kind says where a skill comes from.
type Kind int

// Kinds of origin.
const (
	// KindMCP is a skill served by an MCP server over the Skills extension.
	KindMCP Kind = iota + 1
	// KindFilesystem is a skill in a local folder.
	KindFilesystem
)

// String returns the kind's name as it appears in ls output and --json.
func (k Kind) String() string {
	switch k {
	case KindMCP:
		return "mcp"
	case KindFilesystem:
		return "filesystem"
	}
	return "unknown"
}

// MaxDescription is the longest description accepted in an entry (the Agent
// Skills limit); longer ones make the entry invalid.
const MaxDescription = skillclient.MaxDescription

// Entry is one skill in the registry. Its identity is the pair (Origin, URI);
// the name is only a label. Of its names, show the model Qualified (what
// read_skill takes), show the user CLIName() (what the CLI takes) and
// Source() (where it comes from); Name and Path are the skill's own, from
// its URI, and never identify it alone. An Entry is a snapshot and is never modified: a
// refresh produces a new one.
type Entry struct {
	// Origin is the host-assigned label of the origin, never serverInfo.name.
	Origin string
	// Kind says whether the skill came from an MCP server or a folder.
	Kind Kind
	// URI is the SKILL.md URI as the server sent it; for filesystem skills,
	// the catalog URI of the skill in its folder.
	URI string
	// Root is the skill root URI, URI without "/SKILL.md".
	Root string
	// Path is the skill path, "acme/billing/refunds".
	Path string
	// Name is the frontmatter name, equal to the last segment of Path.
	Name string
	// Frontmatter is the entry's frontmatter, verbatim.
	Frontmatter skill.Frontmatter
	// Files is the complete manifest; nil when Dynamic.
	Files []wire.SkillResource
	// Dynamic is set when the server publishes no digests ("resources": "dynamic").
	Dynamic bool
	// Size is the sum of the files' sizes (0 when Dynamic), not counting
	// files of unknown size.
	Size int64
	// SizesMissing counts the files whose entry gave no size (their Size is
	// SizeUnknown); a server deviation, noted in Warnings.
	SizesMissing int
	// Declined is non-nil when the host will not load the skill; it says why.
	// A declined skill is shown to the user but never to the model.
	Declined error
	// Warnings are notes for the user, such as hidden characters found in the
	// description.
	Warnings []string

	// Qualified is the name the model sees and passes to read_skill: the
	// bare name when no other skill shares it, otherwise qualified by path
	// segments ("billing/refunds") and, across origins, by origin label
	// ("docs__refunds").
	Qualified string
	// SharedWith lists the origin:path of the other skills that share Name.
	SharedWith []string

	// Dir is the local folder of a filesystem skill.
	Dir string

	// Profile is "" for a skill listed over the Skills extension (or a
	// folder), else the compatibility profile it came through (ProfileIndex,
	// ProfileLegacy). Such entries are "dynamic": never persistently approved.
	Profile string
	// Unverified says what the host could not verify about the skill.
	Unverified string
	// Signature is the Sigstore bundle the server attached under
	// wire.MetaSignature, verbatim; nil when the entry carried none.
	Signature []byte
	// Signer is who signed the skill as Options.Trust verified it ("" when
	// unsigned, or not verified), in a stable form a lock file records.
	Signer string
	// SignatureNote is what Options.Trust reports about the signature, for
	// the user ("signature verified: key 0123…").
	SignatureNote string
	// mdDigest is the digest of SKILL.md a compatibility profile listed
	// (the index's), checked when the core reads it.
	mdDigest string

	// ScanFindings are the scan findings the server's registry recorded
	// for this version, under wire.MetaScanFindings, verbatim (a JSON
	// array; docs/registry-scanning.md); nil when the entry carried none.
	ScanFindings json.RawMessage

	expires time.Time
	local   *catalog.Skill
	cat     *catalog.Catalog
}

// Description returns the frontmatter description.
func (e *Entry) Description() string { return e.Frontmatter.Description() }

// CLIName is the origin-qualified form a user types: "docs:billing/refunds".
func (e *Entry) CLIName() string { return e.Origin + ":" + e.displayPath() }

// displayPath is the shortest form the registry needs to tell this entry
// apart inside its origin: the name, or the path segments that distinguish it.
func (e *Entry) displayPath() string {
	q := e.Qualified
	if i := strings.Index(q, "__"); i >= 0 {
		q = q[i+2:]
	}
	return q
}

// File returns the manifest entry for uri.
func (e *Entry) File(uri string) (wire.SkillResource, bool) {
	for _, f := range e.Files {
		if f.URI == uri {
			return f, true
		}
	}
	return wire.SkillResource{}, false
}

// Status is a one-line summary for listings: how the skill will be loaded,
// or why it will not.
func (e *Entry) Status() string {
	switch {
	case e.Declined != nil:
		var ee *EntryError
		if errors.As(e.Declined, &ee) {
			return "declined: " + ee.Msg
		}
		return "declined: " + e.Declined.Error()
	case len(e.SharedWith) > 0:
		return "name shared: use " + e.CLIName()
	case e.Kind == KindFilesystem:
		return "filesystem"
	case e.Dynamic:
		return "dynamic: unverifiable, approval every load"
	}
	return "verified-on-load"
}

// SizeUnknown is the Size of a manifest file whose entry gave no size,
// which the extension requires but some servers omit (Hugging Face's
// hf-mcp-server lists {uri, digest} only). Such an entry is accepted with a
// warning naming the deviation: every read of such a file is bounded by the
// 16 MiB per-skill limit (and counts toward it), and verified by its digest
// like any other, so the missing size costs the early size check only.
const SizeUnknown = skillclient.SizeUnknown

// DecodeEntry decodes one skill entry as a server sent it and validates it
// with [ValidateEntry]: [skillclient.DecodeEntry], whose decoding is
// stricter than encoding/json (keys match case-sensitively, duplicate keys
// are refused, sizes must be non-negative integers), then the host's
// per-skill limits.
func DecodeEntry(origin string, raw []byte) (*Entry, error) {
	s, sk, err := skillclient.DecodeEntry(raw)
	if err != nil {
		return nil, entryError(origin, "", err)
	}
	return newEntry(origin, s, sk), nil
}

// entryError turns skillclient's verdict on an entry into the host's.
func entryError(origin, uri string, err error) error {
	var ee *skillclient.EntryError
	if !errors.As(err, &ee) {
		return &EntryError{Origin: origin, URI: uri, Err: ErrInvalidEntry, Msg: err.Error()}
	}
	return &EntryError{Origin: origin, URI: ee.URI, Err: ErrInvalidEntry, Msg: ee.Msg}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// ValidateEntry checks a decoded entry against the extension's rules
// and returns it as a registry entry. An invalid entry yields an
// [*EntryError] wrapping [ErrInvalidEntry] and must not be registered. An
// entry over the per-skill limits (512 files, 16 MiB) is returned with
// Declined set, checked before anything is fetched and without overflow.
func ValidateEntry(origin string, s *wire.Skill) (*Entry, error) {
	sk, err := skillclient.ParseEntry(s)
	if err != nil {
		return nil, entryError(origin, s.URI, err)
	}
	return newEntry(origin, s, sk), nil
}

// newEntry builds the registry entry of a checked entry, declining it
// when it is over the per-skill limits.
func newEntry(origin string, s *wire.Skill, sk *skilluri.Skill) *Entry {
	e := &Entry{
		Origin:      origin,
		Kind:        KindMCP,
		URI:         s.URI,
		Root:        sk.Root,
		Path:        strings.Join(sk.Path, "/"),
		Name:        sk.Name,
		Frontmatter: s.Frontmatter,
		Dynamic:     s.Resources.Dynamic,
		Signature:   metaSignature(s.Meta),
		// The registry's scan findings, shown by verify.
		ScanFindings: metaScanFindings(s.Meta),
	}
	if err := skill.ValidName(sk.Name); err != nil {
		e.Warnings = append(e.Warnings, "name breaks the Agent Skills naming rules: "+err.Error())
	}
	if e.Dynamic {
		return e
	}
	files := s.Resources.Files
	var total int64
	overSize := false
	for _, f := range files {
		if f.Size == SizeUnknown {
			e.SizesMissing++
			continue
		}
		// Compare before adding, so a hostile size near 2^63 cannot wrap the sum.
		if f.Size > wire.MaxTotalBytes || total > wire.MaxTotalBytes-f.Size {
			overSize = true
		} else {
			total += f.Size
		}
	}
	e.Files = files
	e.Size = total
	switch {
	case len(files) > wire.MaxResources:
		e.Declined = &EntryError{Origin: origin, URI: s.URI, Err: ErrDeclined,
			Msg: fmt.Sprintf("%d files, over the limit of %d per skill", len(files), wire.MaxResources)}
	case overSize:
		e.Declined = &EntryError{Origin: origin, URI: s.URI, Err: ErrDeclined,
			Msg: fmt.Sprintf("files total more than %d bytes (16 MiB), the limit per skill", wire.MaxTotalBytes)}
	}
	return e
}
