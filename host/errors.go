package host

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/skillport/skillport/internal/suggest"
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
	// ErrUntrusted marks a skill Options.Trust refused: unsigned, a bad
	// signature, or a signer the trust policy does not allow.
	ErrUntrusted = errors.New("refused by the trust policy")
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

// HTTPError reports why an HTTP(S) MCP endpoint could not be reached or
// refused to start a session, in words: the URL, the cause, and what to do.
// It replaces the SDK's chain ("calling initialize: sending initialize:
// rejected by transport: Post …"), whose last word ("Unauthorized", "Not
// Found") hides what the server said.
type HTTPError struct {
	// URL is the endpoint.
	URL string
	// Status is the HTTP status of the refusal, or 0 when no answer came.
	Status int
	// AuthError, Description and Scope are the error, error_description
	// and scope of a Bearer WWW-Authenticate challenge (RFC 6750), as sent
	// (clipped, control characters removed).
	AuthError, Description, Scope string
	// Err is the network error when Status is 0.
	Err error
}

// Error is one line: the URL, the cause, the fix.
func (e *HTTPError) Error() string {
	return e.URL + ": " + e.Cause() + "; " + e.Fix()
}

// Unwrap returns the network error, if any.
func (e *HTTPError) Unwrap() error { return e.Err }

// Cause says what went wrong.
func (e *HTTPError) Cause() string {
	said := func(s string) string {
		if e.Description != "" {
			return s + ": " + e.Description
		}
		if e.AuthError != "" {
			return s + " (" + e.AuthError + ")"
		}
		return s
	}
	switch e.Status {
	case 0:
		var dns *net.DNSError
		switch {
		case errors.Is(e.Err, syscall.ECONNREFUSED):
			return "nothing is listening there (connection refused)"
		case errors.As(e.Err, &dns) && dns.IsNotFound:
			return "no such host (" + dns.Name + ")"
		}
		return "no answer: " + e.Err.Error()
	case http.StatusUnauthorized:
		return said("the server refused the credentials (401)")
	case http.StatusForbidden:
		s := said("the server refused access (403)")
		if e.Scope != "" {
			s += "; it needs scope " + strconv.Quote(e.Scope)
		}
		return s
	case http.StatusNotFound:
		return "no MCP endpoint at " + e.path() + " (404 Not Found)"
	}
	return fmt.Sprintf("the server answered %d %s, not an MCP session", e.Status, http.StatusText(e.Status))
}

// Fix says what to do about it.
func (e *HTTPError) Fix() string {
	switch e.Status {
	case 0:
		if errors.Is(e.Err, syscall.ECONNREFUSED) {
			return "start the server, or check the host and port"
		}
		return "check the URL and that the server is running"
	case http.StatusUnauthorized:
		return "sign in again or send a valid token"
	case http.StatusForbidden:
		return "use a token that grants it, or ask the server's administrator for access"
	case http.StatusNotFound:
		if p := e.path(); p != "/mcp" && suggest.Distance(strings.ToLower(p), "/mcp") <= 2 {
			return "is it /mcp?"
		}
		return "give the server's MCP endpoint URL (often ending in /mcp)"
	}
	return "check that the URL is the server's MCP endpoint"
}

func (e *HTTPError) path() string {
	if u, err := url.Parse(e.URL); err == nil {
		if u.Path == "" {
			return "/"
		}
		return u.Path
	}
	return e.URL
}

// maxChallengeField bounds each WWW-Authenticate field kept for a message.
const maxChallengeField = 200

var challengeParam = regexp.MustCompile(`([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))`)

// parseChallenge reads error, error_description and scope from a Bearer
// WWW-Authenticate header value; each is clipped and stripped of control
// characters, as it is shown to the user.
func parseChallenge(h string) (authErr, desc, scope string) {
	if len(h) > 8<<10 {
		h = h[:8<<10]
	}
	for _, m := range challengeParam.FindAllStringSubmatch(h, 32) {
		v := m[2]
		if m[3] != "" {
			v = m[3]
		}
		v = strings.ReplaceAll(v, `\"`, `"`)
		v = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || r == utf8.RuneError {
				return -1
			}
			return r
		}, v)
		if len(v) > maxChallengeField {
			v = strings.ToValidUTF8(v[:maxChallengeField], "") + "…"
		}
		switch strings.ToLower(m[1]) {
		case "error":
			authErr = v
		case "error_description":
			desc = v
		case "scope":
			scope = v
		}
	}
	return authErr, desc, scope
}
