package host

import (
	"errors"
	"fmt"
	"strings"

	"github.com/skillport/skillport/skillclient"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrVerification is wrapped by every [*VerificationError]: content that
	// did not match the entry it was read under, or a read outside the held
	// manifest. The content was discarded.
	// It is [skillclient.ErrVerification]: one sentinel for the host and
	// the client it is built on.
	ErrVerification = skillclient.ErrVerification
	// ErrInvalidEntry marks a skills/list or skills/get entry that breaks the
	// extension's rules; such an entry is never registered or loaded.
	// It is [skillclient.ErrInvalidEntry].
	ErrInvalidEntry = skillclient.ErrInvalidEntry
	// ErrDeclined marks a skill the host will not load, e.g. over the
	// per-skill limits or with "dynamic" resources while those are refused.
	ErrDeclined = errors.New("skill declined")
	// ErrNotApproved is returned when the user (or policy) did not approve a load.
	ErrNotApproved = errors.New("not approved")
	// ErrCrossOrigin is returned when a read would cross from one origin to
	// another without per-call approval.
	ErrCrossOrigin = errors.New("cross-origin read blocked")
	// ErrUnknownSkill is returned for a name or URI the registry does not hold.
	ErrUnknownSkill = errors.New("unknown skill")
	// ErrAmbiguous is returned for a bare name several skills share; the
	// error lists the qualified names to use instead.
	ErrAmbiguous = errors.New("ambiguous skill name")
	// ErrUnknownOrigin is returned for a label no configured origin has.
	ErrUnknownOrigin = errors.New("unknown origin")
	// ErrUnavailable is returned when an origin is not connected or did not
	// declare the Skills extension.
	ErrUnavailable = errors.New("origin unavailable")
	// ErrNoSkills is wrapped, together with ErrUnavailable, by the status of
	// a server that answered but does not serve skills (it declares neither
	// the Skills extension nor a compatibility profile). Most servers in a
	// desktop client's configuration are such tool servers: a user listing
	// skills is told, but it is not a failure.
	ErrNoSkills = errors.New("the server does not declare the Skills extension")
	// ErrBudget is returned once an origin has sent more bytes in a session
	// than [Options.FetchBudget] allows.
	ErrBudget = errors.New("server skill budget exceeded")
	// ErrNotLoaded is returned by file and directory reads of a skill that is
	// not being acted on.
	ErrNotLoaded = errors.New("skill not loaded")
	// ErrNotFile is returned when a path names a directory or the skill root
	// where a file was expected.
	ErrNotFile = errors.New("not a file")
	// ErrNoSuchFile is wrapped by every [*NoSuchFileError]: a path the
	// loaded skill does not have. Nothing was read; it is a mistake of the
	// caller (a typo, a guess, a path outside the skill), not a sign that
	// the server misbehaved.
	ErrNoSuchFile = errors.New("no such file")
)

// Reason says why verification failed, or why a path names no file of a
// skill.
type Reason string

// Verification failure reasons, and (ReasonUnlisted, ReasonOutsideRoot) the
// reasons of a [*NoSuchFileError].
const (
	ReasonSize        Reason = "size mismatch"
	ReasonDigest      Reason = "digest mismatch"
	ReasonFrontmatter Reason = "frontmatter differs from the entry"
	ReasonUnlisted    Reason = "not listed in the skill's resources"
	ReasonOutsideRoot Reason = "outside the skill root"
	ReasonContents    Reason = "resources/read did not return exactly one content item for the URI"
	ReasonEncoding    Reason = "SKILL.md is not valid UTF-8 Markdown with frontmatter"
	ReasonLimit       Reason = "content of no announced size exceeded the skill's 16 MiB retrieval limit"
)

// VerificationError reports content that does not match the held entry.
// The content it concerns was discarded and never reaches the model.
type VerificationError struct {
	// Origin is the host label of the server.
	Origin string
	// URI is the file that failed.
	URI string
	// Reason is the kind of failure.
	Reason Reason
	// Detail gives the expected and actual values, or the differing
	// frontmatter fields.
	Detail string
	// Fields lists the differing frontmatter fields for ReasonFrontmatter.
	Fields []string
	// Changed is set when a refresh showed that the server now publishes a
	// different resources set: the skill changed and must be re-approved.
	Changed bool
}

// Error names the origin, the file, the check that failed and the detail.
func (e *VerificationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: %s", e.Origin, e.URI, e.Reason)
	if e.Detail != "" {
		b.WriteString(" (" + e.Detail + ")")
	}
	if e.Changed {
		b.WriteString("; the skill changed on the server since it was approved: load it again to review and re-approve")
	} else {
		b.WriteString("; the content was discarded")
	}
	return b.String()
}

// Unwrap returns ErrVerification.
func (e *VerificationError) Unwrap() error { return ErrVerification }

// NoSuchFileError reports a file or directory reference that names nothing
// the loaded skill has: not in its manifest (or, for a legacy skill, not
// among the files its server listed), or outside its root. It is told apart
// from a [*VerificationError] so that a model's typo is answered as one,
// with the way to find the right path, while tampering wording stays for
// content that really failed verification. Nothing was read from the server.
type NoSuchFileError struct {
	// Origin is the host label of the skill's server; Skill its name.
	Origin, Skill string
	// Path is the reference as given (clipped to a short prefix).
	Path string
	// Dir is set when a directory was asked for.
	Dir bool
	// Reason is ReasonUnlisted or ReasonOutsideRoot.
	Reason Reason
}

// Error names the path, the skill, and the tool call that shows its files.
func (e *NoSuchFileError) Error() string {
	what, tool := "file", ToolListSkillDir+" to see its files"
	if e.Dir {
		what, tool = "directory", ToolListSkillDir+" with path \"\" to see its root"
	}
	return fmt.Sprintf("no such %s %q in skill %s (%s); call %s", what, e.Path, e.Skill, e.Reason, tool)
}

// Unwrap returns ErrNoSuchFile.
func (e *NoSuchFileError) Unwrap() error { return ErrNoSuchFile }

// reasons maps the verifier's failures to the host's reasons.
var reasons = map[error]Reason{
	skillclient.ErrSize:        ReasonSize,
	skillclient.ErrDigest:      ReasonDigest,
	skillclient.ErrFrontmatter: ReasonFrontmatter,
	skillclient.ErrUnlisted:    ReasonUnlisted,
	skillclient.ErrContents:    ReasonContents,
	skillclient.ErrEncoding:    ReasonEncoding,
}

// verification turns a [*skillclient.VerifyError] into the host's error
// for origin, keeping its detail.
func verification(origin string, err error) *VerificationError {
	var ve *skillclient.VerifyError
	if !errors.As(err, &ve) {
		return &VerificationError{Origin: origin, Reason: ReasonContents, Detail: err.Error()}
	}
	return &VerificationError{Origin: origin, URI: ve.URI, Reason: reasons[ve.Err], Detail: ve.Detail, Fields: ve.Fields}
}

// EntryError reports why an entry was not registered or is not loadable.
type EntryError struct {
	// Origin is the host label of the server.
	Origin string
	// URI is the entry's uri as received (may itself be invalid).
	URI string
	// Msg says what is wrong.
	Msg string
	// Err is ErrInvalidEntry or ErrDeclined.
	Err error
}

// Error names the origin, the entry and why it was refused.
func (e *EntryError) Error() string {
	uri := e.URI
	if len(uri) > 200 {
		uri = uri[:200] + "…"
	}
	return fmt.Sprintf("%s: %q: %v: %s", e.Origin, uri, e.Err, e.Msg)
}

// Unwrap returns the sentinel error.
func (e *EntryError) Unwrap() error { return e.Err }
