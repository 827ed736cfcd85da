package skillclient

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/wire"
)

// Sentinel errors of verification; test with errors.Is. Every
// [*VerifyError] also matches [ErrVerification].
var (
	// ErrVerification matches every verification failure: the content does
	// not match the entry it was read under and must be discarded.
	ErrVerification = errors.New("verification failed")
	// ErrUnlisted: the file is not in the entry's resources, so nothing
	// vouches for it.
	ErrUnlisted = errors.New("file not listed in the skill's resources")
	// ErrSize: the content's length differs from the size in the entry.
	ErrSize = errors.New("size mismatch")
	// ErrDigest: the content's SHA-256 differs from the digest in the entry.
	ErrDigest = errors.New("digest mismatch")
	// ErrFrontmatter: a SKILL.md whose frontmatter differs from the entry's,
	// so the skill listed is not the skill that would be loaded.
	ErrFrontmatter = errors.New("frontmatter differs from the entry")
	// ErrEncoding: a SKILL.md that is not UTF-8 Markdown with frontmatter.
	ErrEncoding = errors.New("SKILL.md is not valid UTF-8 Markdown with frontmatter")
	// ErrContents: a resources/read result that is not exactly one content
	// item for the URI asked for.
	ErrContents = errors.New("resources/read did not return exactly one content item for the URI")
	// ErrDynamic: the entry's resources are "dynamic", so there is nothing
	// to verify content against. It is not an ErrVerification: reading
	// such a skill is allowed, but its content is unverified.
	ErrDynamic = errors.New(`the skill's resources are "dynamic": its content cannot be verified`)
	// ErrInvalidEntry marks a skills/list or skills/get entry that breaks
	// the extension's rules; such an entry must not be loaded.
	ErrInvalidEntry = errors.New("invalid skill entry")
)

// VerifyError reports content that does not match its entry. Err is one
// of the sentinel errors above.
type VerifyError struct {
	// URI is the file that failed.
	URI string
	// Err is the kind of failure: ErrUnlisted, ErrSize, ErrDigest,
	// ErrFrontmatter, ErrEncoding or ErrContents.
	Err error
	// Detail gives the expected and actual values, or the differing
	// frontmatter fields.
	Detail string
	// Fields lists the differing frontmatter fields for ErrFrontmatter.
	Fields []string
}

// Error names the file, the failure and its detail, and says the content
// was discarded.
func (e *VerifyError) Error() string {
	s := e.URI + ": " + e.Err.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s + "; the content was discarded"
}

// Unwrap returns the kind of failure and [ErrVerification].
func (e *VerifyError) Unwrap() []error { return []error{e.Err, ErrVerification} }

// Digest returns the digest the extension publishes for data: "sha256:"
// and 64 lowercase hex digits.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// VerifyResource checks content read at uri against entry, the skills/list
// or skills/get entry it was read under: uri must be listed in the
// entry's resources, and content must have the listed size and digest.
// It returns nil only when the content is exactly what the entry vouches
// for; a "dynamic" entry returns [ErrDynamic]. For the skill's own SKILL.md
// use [VerifySkillMD], which also compares the frontmatter.
func VerifyResource(entry *wire.Skill, uri string, content []byte) error {
	if entry == nil || entry.Resources == nil {
		return fmt.Errorf("%w: the entry has no resources; it must not be loaded", ErrInvalidEntry)
	}
	if entry.Resources.Dynamic {
		return ErrDynamic
	}
	for _, f := range entry.Resources.Files {
		if f.URI == uri {
			return VerifyFile(f, content)
		}
	}
	return &VerifyError{URI: uri, Err: ErrUnlisted}
}

// SizeUnknown is the Size of a manifest item whose server gave no size, a
// deviation from the extension some servers make (Hugging Face's
// hf-mcp-server). Such content is checked by digest alone, and a caller
// must bound how much it reads in some other way (the host counts it
// toward the skill's 16 MiB).
const SizeUnknown int64 = -1

// VerifyFile checks content against one manifest item: the length first
// (unless it is [SizeUnknown]), then the SHA-256 digest.
func VerifyFile(res wire.SkillResource, content []byte) error {
	if n := int64(len(content)); res.Size != SizeUnknown && n != res.Size {
		return &VerifyError{URI: res.URI, Err: ErrSize, Detail: fmt.Sprintf("entry says %d bytes, server sent %d", res.Size, n)}
	}
	if d := Digest(content); d != res.Digest {
		return &VerifyError{URI: res.URI, Err: ErrDigest, Detail: "entry says " + res.Digest + ", content hashes to " + d}
	}
	return nil
}

// VerifySkillMD checks a skill's own SKILL.md against its entry: size and
// digest as [VerifyResource] does (skipped for a "dynamic" entry), then
// that it parses as Markdown with frontmatter equal to the entry's. It
// returns the parsed document, which is safe to hand to a model.
func VerifySkillMD(entry *wire.Skill, content []byte) (*skill.Document, error) {
	if err := VerifyResource(entry, entry.URI, content); err != nil && !errors.Is(err, ErrDynamic) {
		return nil, err
	}
	return ParseSkillMD(entry.URI, entry.Frontmatter, content)
}

// ParseSkillMD parses verified SKILL.md bytes and checks that their
// frontmatter equals want, the entry's.
func ParseSkillMD(uri string, want skill.Frontmatter, content []byte) (*skill.Document, error) {
	doc, err := skill.Parse(content)
	if err != nil {
		return nil, &VerifyError{URI: uri, Err: ErrEncoding, Detail: err.Error()}
	}
	if diff := want.Diff(doc.Frontmatter); len(diff) > 0 {
		return nil, &VerifyError{URI: uri, Err: ErrFrontmatter, Fields: diff, Detail: "fields " + strings.Join(diff, ", ")}
	}
	return doc, nil
}

// Contents returns the bytes and media type of a resources/read result
// for uri, which must hold exactly one content item, for that URI, with
// text or a blob but not both. An empty text with no blob is an empty file.
func Contents(rr *mcp.ReadResourceResult, uri string) ([]byte, string, error) {
	var c *mcp.ResourceContents
	n := 0
	if rr != nil {
		n = len(rr.Contents)
		for _, x := range rr.Contents {
			if x == nil || x.URI != uri || c != nil {
				c = nil
				break
			}
			c = x
		}
	}
	if c == nil || (c.Text != "" && c.Blob != nil) {
		return nil, "", &VerifyError{URI: uri, Err: ErrContents, Detail: fmt.Sprintf("%d content items", n)}
	}
	data := c.Blob
	if data == nil {
		data = []byte(c.Text)
	}
	return data, c.MIMEType, nil
}

// MaxDescription is the longest description an entry may carry (the
// Agent Skills limit).
const MaxDescription = skill.MaxDescriptionLength

// ValidDigest reports whether d is a digest as the extension writes it:
// "sha256:" and 64 lowercase hex digits. It runs for every file of every
// listed skill, so it is a loop rather than a regexp (a regexp cost a
// tenth of validating an entry).
func ValidDigest(d string) bool {
	const prefix = "sha256:"
	if len(d) != len(prefix)+64 || d[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(d); i++ {
		if c := d[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// EntryError reports an entry that breaks the extension's rules.
type EntryError struct {
	// URI is the entry's uri as received (it may itself be invalid).
	URI string
	// Msg says what is wrong.
	Msg string
}

// Error names the entry (its URI cut to 200 bytes) and what is wrong.
func (e *EntryError) Error() string {
	uri := e.URI
	if len(uri) > 200 {
		uri = uri[:200] + "…"
	}
	return fmt.Sprintf("%q: %v: %s", uri, ErrInvalidEntry, e.Msg)
}

// Unwrap returns [ErrInvalidEntry].
func (e *EntryError) Unwrap() error { return ErrInvalidEntry }

// ValidateEntry checks an entry a server sent against the extension's
// rules before anything of it is used: a valid SKILL.md URI whose last
// path segment is the frontmatter name, a non-empty description within
// [MaxDescription] characters, and resources that are "dynamic" or list
// SKILL.md and only files inside the skill root, each once, with a
// sha256 digest and a non-negative size. It does not apply the per-skill
// limits (512 files, 16 MiB), which a host enforces as policy.
func ValidateEntry(s *wire.Skill) error {
	_, err := ParseEntry(s)
	return err
}

// ParseEntry is [ValidateEntry] that also returns what the entry's URI
// names (root, path, name), which a host registering the entry needs: it
// spares parsing the URI a second time for every listed skill.
func ParseEntry(s *wire.Skill) (*skilluri.Skill, error) {
	bad := func(format string, args ...any) error {
		return &EntryError{URI: s.URI, Msg: fmt.Sprintf(format, args...)}
	}
	sk, err := skilluri.ParseSkill(s.URI)
	if err != nil {
		return nil, bad("%v", err)
	}
	name, ok := s.Frontmatter.Get("name")
	if !ok {
		return nil, bad("frontmatter has no name")
	}
	if n, ok := name.(string); !ok || n != sk.Name {
		return nil, bad("frontmatter name %s does not equal the last segment of the skill path, %q", quoteAny(name), sk.Name)
	}
	desc, ok := s.Frontmatter.Get("description")
	if d, isStr := desc.(string); !ok || !isStr || strings.TrimSpace(d) == "" {
		return nil, bad("frontmatter description is missing, empty or not a string")
	} else if utf8.RuneCountInString(d) > MaxDescription {
		return nil, bad("description is %d characters; the limit is %d", utf8.RuneCountInString(d), MaxDescription)
	}
	if s.Resources == nil {
		return nil, bad(`resources is missing; it must be an array or "dynamic"`)
	}
	if s.Resources.Dynamic {
		return sk, nil
	}
	files := s.Resources.Files
	if len(files) == 0 {
		return nil, bad("resources is an empty array; it must list SKILL.md at least")
	}
	// A scan finds duplicates fastest for the few files of most skills; a
	// map takes over for long manifests so that one cannot be quadratic.
	var seen map[string]bool
	if len(files) > dupScan {
		seen = make(map[string]bool, len(files))
	}
	hasSkill := false
	for i, f := range files {
		if seen != nil {
			if seen[f.URI] {
				return nil, bad("resources lists %q twice", f.URI)
			}
			seen[f.URI] = true
		} else if slices.ContainsFunc(files[:i], func(g wire.SkillResource) bool { return g.URI == f.URI }) {
			return nil, bad("resources lists %q twice", f.URI)
		}
		if f.URI == s.URI {
			// Parsed above, as the skill's own URI.
			hasSkill = true
		} else if _, ok := skilluri.Within(sk.Root, f.URI); !ok {
			return nil, bad("resources item %d, %q, is not inside the skill root %s", i, f.URI, sk.Root)
		} else if err := skilluri.Check(f.URI); err != nil {
			return nil, bad("resources item %d: %v", i, err)
		}
		if !ValidDigest(f.Digest) {
			return nil, bad("resources item %d (%q): digest %q is not sha256: and 64 lowercase hex digits", i, f.URI, clip(f.Digest))
		}
		if f.Size < 0 && f.Size != SizeUnknown {
			return nil, bad("resources item %d (%q): size %d is negative", i, f.URI, f.Size)
		}
	}
	if !hasSkill {
		return nil, bad("resources does not list the skill's own SKILL.md, %q", s.URI)
	}
	return sk, nil
}

// dupScan is the longest manifest whose duplicates are found by a scan.
const dupScan = 16

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func quoteAny(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(clip(s))
	}
	b, _ := json.Marshal(v)
	return clip(string(b))
}
