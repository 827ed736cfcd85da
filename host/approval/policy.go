package approval

import (
	"context"
	"fmt"
	"os"

	"github.com/skillport/skillport/internal/jsonc"
)

// Policy decides from rules a user wrote in advance, and defers everything
// else to Fallback (Deny when nil). Rules match Load requests only: a policy
// never approves cross-origin reads or execution, which need a decision per
// call.
//
// The file format is
//
//	{"allow": [{"origin": "docs", "skill": "pdf-processing"}, {"origin": "team", "skill": "*"}],
//	 "deny":  [{"origin": "*", "skill": "shell-tricks"}]}
//
// where skill matches the frontmatter name or the SKILL.md URI, "*" matches
// anything, "grantTools": true also grants allowed-tools, and "dynamic": true
// lets the rule cover skills whose content cannot be verified (without it a
// rule never covers them). Deny rules win over allow rules.
type Policy struct {
	Allow    []Rule   `json:"allow"`
	Deny     []Rule   `json:"deny"`
	Fallback Approver `json:"-"`
}

// Rule is one policy line.
type Rule struct {
	Origin     string `json:"origin"`
	Skill      string `json:"skill"`
	GrantTools bool   `json:"grantTools,omitempty"`
	Dynamic    bool   `json:"dynamic,omitempty"`
}

// LoadPolicy reads a policy file (JSON; comments and trailing commas
// allowed). Unknown keys are errors.
func LoadPolicy(path string, fallback Approver) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("approval: policy: %w", err)
	}
	p := &Policy{Fallback: fallback}
	// The format is ours alone: a key it does not define ("alow") or a
	// value of the wrong shape would silently approve or deny nothing, so
	// both are errors at their line and column. Comments are allowed.
	if err := jsonc.Unmarshal(path, data, p, true); err != nil {
		return nil, fmt.Errorf("approval: policy: %w", err)
	}
	for i, r := range append(append([]Rule{}, p.Allow...), p.Deny...) {
		if r.Origin == "" || r.Skill == "" {
			return nil, fmt.Errorf("approval: policy %s: rule %d needs both origin and skill (use \"*\" for any)", path, i+1)
		}
	}
	return p, nil
}

func (r Rule) matches(req *Request) bool {
	return (r.Origin == "*" || r.Origin == req.Origin) &&
		(r.Skill == "*" || r.Skill == req.Name || r.Skill == req.URI)
}

// Approve applies the rules.
func (p *Policy) Approve(ctx context.Context, req *Request) (Decision, error) {
	if req.Kind == Load {
		for _, r := range p.Deny {
			if r.matches(req) {
				return Decision{}, nil
			}
		}
		for _, r := range p.Allow {
			if r.matches(req) && (!req.Dynamic || r.Dynamic) {
				return Decision{Allow: true, GrantTools: r.GrantTools}, nil
			}
		}
	}
	if p.Fallback == nil {
		return Decision{}, nil
	}
	return p.Fallback.Approve(ctx, req)
}
