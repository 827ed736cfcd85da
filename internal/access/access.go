// Package access decides which callers see which skills, and applies that
// decision to everything a server answers from: one function,
// [Rules.Visible], is consulted for every skill, file and directory, so a
// skill a caller may not see is absent from its view of the catalog, not
// merely refused, and a probe by URI, name or directory gets the same
// answer as for a skill that does not exist.
//
// Rules are written in a JSONC file:
//
//	{
//	  "rules": [
//	    // everyone, signed in or not, sees the public skills
//	    {"anyone": true, "paths": ["public/"]},
//	    // a token with this scope sees the internal ones
//	    {"scope": "skills:internal", "paths": ["internal/"]},
//	    // members of group "ops" see skills whose metadata says team: ops
//	    {"group": "ops", "metadata": {"team": "ops"}},
//	    {"subject": "alice", "paths": [""]}
//	  ]
//	}
//
// A skill is visible to a caller when at least one rule matches both. A
// rule matches a caller when it says "anyone", or when every one of its
// "subject", "scope" and "group" that is set is the caller's. It matches a
// skill when every one of its "paths" (a prefix of the skill path, matched
// at a segment boundary; "" is every skill) and "metadata" that is set
// matches; a rule with neither matches every skill. No rule, no skill.
//
// The same file says who may change a governed registry
// (docs/registry-governance.md): a rule with "roles" grants them on the
// namespaces its "paths" name (every namespace without paths):
//
//	{"group": "billing-devs", "roles": ["publish"], "paths": ["acme/billing"]},
//	{"group": "security", "roles": ["review"], "paths": ["acme"]},
//	{"subject": "root@example.com", "roles": ["admin"]}
//
// The roles are read (see the skills, as a rule without roles does),
// publish (publish, roll back, yank), review (approve or reject a version
// pending review) and admin (all of them, and the review mode). A rule
// with roles that do not include read or admin grants no visibility.
// [Rules.Allowed] is the decision.
package access

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/jsonc"
	"github.com/skillport/skillport/skillserver"
)

// MaxRules bounds a rules file, so that the decision made for every skill
// of every request stays cheap.
const MaxRules = 1000

// MaxFileBytes bounds the size of a rules file.
const MaxFileBytes = 1 << 20

// Rule grants the callers it matches the skills it matches.
type Rule struct {
	// Anyone matches every caller, anonymous ones too.
	Anyone bool `json:"anyone,omitempty"`
	// Subject matches the caller with this subject ("sub" claim).
	Subject string `json:"subject,omitempty"`
	// Scope matches callers whose token grants this scope.
	Scope string `json:"scope,omitempty"`
	// Group matches callers in this group ("groups" claim).
	Group string `json:"group,omitempty"`
	// Paths are skill path prefixes, matched at a "/" boundary.
	Paths []string `json:"paths,omitempty"`
	// Metadata are frontmatter "metadata" entries the skill must have,
	// with these string values.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Roles, when set, are what the rule grants on the namespaces Paths
	// names: read, publish, review, admin. Without it the rule grants read.
	Roles []string `json:"roles,omitempty"`
}

// The roles a rule may grant.
const (
	RoleRead    = "read"
	RolePublish = "publish"
	RoleReview  = "review"
	RoleAdmin   = "admin"
)

// Rules is a parsed rules file. The zero value shows nothing to anyone.
type Rules struct {
	Rules []Rule `json:"rules"`
}

// Load reads and parses the rules file at path.
func Load(path string) (*Rules, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("access: reading %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse parses a rules file's content; file names it in errors.
func Parse(file string, data []byte) (*Rules, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("access: %s is larger than %d bytes", file, MaxFileBytes)
	}
	var r Rules
	if err := jsonc.Unmarshal(file, data, &r, true); err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	if len(r.Rules) > MaxRules {
		return nil, fmt.Errorf("access: %s: %d rules, more than the %d allowed; grant by group or scope instead of by subject", file, len(r.Rules), MaxRules)
	}
	for i, ru := range r.Rules {
		if !ru.Anyone && ru.Subject == "" && ru.Scope == "" && ru.Group == "" {
			return nil, fmt.Errorf("access: %s: rules[%d] names no caller; set \"anyone\": true, or a \"subject\", \"scope\" or \"group\"", file, i)
		}
		for j, p := range ru.Paths {
			if strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
				return nil, fmt.Errorf("access: %s: rules[%d].paths[%d] %q must be a relative skill path prefix such as \"team/\"", file, i, j, p)
			}
		}
		for j, role := range ru.Roles {
			switch role {
			case RoleRead, RolePublish, RoleReview, RoleAdmin:
			default:
				return nil, fmt.Errorf("access: %s: rules[%d].roles[%d] %q is not a role; the roles are read, publish, review and admin", file, i, j, role)
			}
			if role == RoleRead {
				continue
			}
			// Changing the registry is never granted to anonymous callers,
			// nor by a skill's own frontmatter.
			if ru.Anyone {
				return nil, fmt.Errorf("access: %s: rules[%d] grants %q to anyone; grant it by subject, scope or group", file, i, role)
			}
			if len(ru.Metadata) > 0 {
				return nil, fmt.Errorf("access: %s: rules[%d] grants %q by metadata, which only read can be; name the namespaces in \"paths\"", file, i, role)
			}
		}
	}
	return &r, nil
}

// Visible is the one decision: whether caller c (nil for anonymous) may
// see sk. Everything else in this package, and the web catalog, ask it.
func (r *Rules) Visible(c *skillserver.Caller, sk *catalog.Skill) bool {
	if r == nil || sk == nil {
		return false
	}
	for i := range r.Rules {
		if r.Rules[i].grantsRead() && r.Rules[i].matchesCaller(c) && r.Rules[i].matchesSkill(sk) {
			return true
		}
	}
	return false
}

// Allowed reports whether caller c (nil for anonymous) holds role on the
// registry namespace ns: a rule matching c grants the role, or admin, on
// a prefix of ns (matched at a "/" boundary; "" and a rule without paths
// are every namespace). Read is granted by rules without roles too.
func (r *Rules) Allowed(c *skillserver.Caller, role, ns string) bool {
	if r == nil {
		return false
	}
	for i := range r.Rules {
		ru := &r.Rules[i]
		if !(slices.Contains(ru.Roles, role) || slices.Contains(ru.Roles, RoleAdmin) || role == RoleRead && ru.grantsRead()) {
			continue
		}
		if !ru.matchesCaller(c) || role == RoleRead && len(ru.Metadata) > 0 {
			continue
		}
		if len(ru.Paths) == 0 || slices.ContainsFunc(ru.Paths, func(p string) bool { return underPrefix(ns, p) }) {
			return true
		}
	}
	return false
}

func (ru *Rule) grantsRead() bool {
	return len(ru.Roles) == 0 || slices.Contains(ru.Roles, RoleRead) || slices.Contains(ru.Roles, RoleAdmin)
}

func (ru *Rule) matchesCaller(c *skillserver.Caller) bool {
	if ru.Anyone {
		return true
	}
	if c == nil {
		return false
	}
	return (ru.Subject == "" || ru.Subject == c.Subject) &&
		(ru.Scope == "" || slices.Contains(c.Scopes, ru.Scope)) &&
		(ru.Group == "" || slices.Contains(c.Groups, ru.Group))
}

func (ru *Rule) matchesSkill(sk *catalog.Skill) bool {
	if len(ru.Paths) > 0 && !slices.ContainsFunc(ru.Paths, func(p string) bool { return underPrefix(sk.Path, p) }) {
		return false
	}
	if len(ru.Metadata) > 0 {
		md, _ := sk.Frontmatter.Get("metadata")
		m, _ := md.(map[string]any)
		for k, want := range ru.Metadata {
			if got, ok := m[k].(string); !ok || got != want {
				return false
			}
		}
	}
	return true
}

// underPrefix reports whether skill path p is under prefix: "team/" and
// "team" both match "team/x" and "team", never "teamwork/x".
func underPrefix(p, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return true
	}
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}
