// Package approval records and asks for the user's consent to load a skill
// served over MCP, bound to the exact content the user saw (SEP-2640,
// "Content-bound approval").
//
// An approval is keyed by [Key]: a SHA-256 over the origin's host label, the
// skill URI and every {uri, digest} of the skill's resources. When a server
// publishes a different set (a file rotated, added or removed) the key
// changes, so the old approval no longer applies and the user is asked again.
// Approvals of "dynamic" skills, cross-origin reads and code execution are
// never persisted.
package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	"github.com/skillport/skillport/wire"
)

// Kind is what an approval request is for.
type Kind int

// Kinds of request.
const (
	// Load asks to load a skill into the model's context.
	Load Kind = iota + 1
	// CrossOrigin asks to let a skill from one server cause a read on another.
	CrossOrigin
	// Exec asks to run host code while the model acts on an MCP skill.
	Exec
)

// String returns the kind's name as it appears in prompts and policy files.
func (k Kind) String() string {
	switch k {
	case Load:
		return "load"
	case CrossOrigin:
		return "cross-origin read"
	case Exec:
		return "execution"
	}
	return "unknown"
}

// Request describes what the user is asked to approve. Every string in it
// that came from a server is untrusted; approvers must sanitise it before
// display (package sanitize).
type Request struct {
	Kind Kind
	// Origin is the host label of the server the skill comes from.
	Origin string
	// URI is the skill's SKILL.md URI.
	URI string
	// Name and Description are the entry's frontmatter fields.
	Name, Description string
	// Files is the resources set the approval binds to; nil for dynamic skills.
	Files []wire.SkillResource
	// Dynamic is set for skills whose content cannot be verified.
	Dynamic bool
	// Size is the total size of Files.
	Size int64
	// AllowedTools is the skill's allowed-tools request, "" if none. It has
	// no effect unless the decision grants it.
	AllowedTools string
	// Warnings are notes to show, such as hidden characters in the description.
	Warnings []string
	// Target is, for CrossOrigin, the label of the other server; for Exec,
	// the command or tool call.
	Target string
	// TargetURI is, for CrossOrigin, the URI to be read on Target.
	TargetURI string
}

// Decision is an approver's answer.
type Decision struct {
	// Allow approves the request.
	Allow bool
	// Remember persists a Load approval (ignored for dynamic skills and
	// other kinds).
	Remember bool
	// GrantTools also grants the skill's allowed-tools request.
	GrantTools bool
}

// An Approver decides on requests, typically by asking the user.
type Approver interface {
	Approve(ctx context.Context, req *Request) (Decision, error)
}

// Func adapts a function to the Approver interface.
type Func func(ctx context.Context, req *Request) (Decision, error)

// Approve calls f.
func (f Func) Approve(ctx context.Context, req *Request) (Decision, error) { return f(ctx, req) }

// Deny refuses every request. It is the default when nobody can be asked.
type Deny struct{}

// Approve returns a refusal.
func (Deny) Approve(context.Context, *Request) (Decision, error) { return Decision{}, nil }

// ErrNoApprover is returned by approvers that cannot ask anyone.
var ErrNoApprover = errors.New("approval: no one to ask")

// Key returns the content-bound key of a skill approval: hex SHA-256 over
// the label, the URI and the sorted "uri\x00digest\n" lines of files.
func Key(label, uri string, files []wire.SkillResource) string {
	lines := make([]string, len(files))
	for i, f := range files {
		lines[i] = f.URI + "\x00" + f.Digest + "\n"
	}
	slices.Sort(lines)
	h := sha256.New()
	h.Write([]byte(label))
	h.Write([]byte{0})
	h.Write([]byte(uri))
	h.Write([]byte{0})
	h.Write([]byte(strings.Join(lines, "")))
	return hex.EncodeToString(h.Sum(nil))
}
