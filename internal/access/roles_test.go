package access_test

import (
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/skillserver"
)

// TestAllowed: each role is granted by subject, scope and group on the
// namespaces a rule's paths name, admin holds every role, and a rule
// granting only registry roles grants no visibility.
func TestAllowed(t *testing.T) {
	rules, err := access.Parse("rules.jsonc", []byte(`{"rules": [
		{"anyone": true, "paths": ["public"]},
		{"group": "billing", "roles": ["publish"], "paths": ["acme/billing"]},
		{"scope": "skills:review", "roles": ["review"], "paths": ["acme"]},
		{"subject": "root", "roles": ["admin"]},
		{"group": "readers", "roles": ["read"], "paths": ["acme/tools"]},
		{"group": "ops", "metadata": {"team": "ops"}},
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	billing := &skillserver.Caller{Subject: "alice", Groups: []string{"billing"}}
	reviewer := &skillserver.Caller{Subject: "bob", Scopes: []string{"skills:review"}}
	root := &skillserver.Caller{Subject: "root"}
	reader := &skillserver.Caller{Subject: "carol", Groups: []string{"readers"}}
	ops := &skillserver.Caller{Subject: "dave", Groups: []string{"ops"}}
	for _, tc := range []struct {
		c        *skillserver.Caller
		role, ns string
		want     bool
	}{
		{billing, access.RolePublish, "acme/billing", true},
		{billing, access.RolePublish, "acme/billing/eu", true},
		{billing, access.RolePublish, "acme/billingx", false},
		{billing, access.RolePublish, "acme", false},
		{billing, access.RolePublish, "", false},
		{billing, access.RoleReview, "acme/billing", false},
		{billing, access.RoleRead, "acme/billing", false},
		{reviewer, access.RoleReview, "acme/billing", true},
		{reviewer, access.RolePublish, "acme/billing", false},
		{reviewer, access.RoleAdmin, "acme", false},
		{root, access.RoleAdmin, "", true},
		{root, access.RolePublish, "anything/at/all", true},
		{root, access.RoleReview, "", true},
		{reader, access.RoleRead, "acme/tools", true},
		{reader, access.RolePublish, "acme/tools", false},
		{ops, access.RoleRead, "team", false}, // a metadata rule grants no namespace
		{nil, access.RoleRead, "public", true},
		{nil, access.RolePublish, "public", false},
	} {
		if got := rules.Allowed(tc.c, tc.role, tc.ns); got != tc.want {
			name := "anonymous"
			if tc.c != nil {
				name = tc.c.Subject
			}
			t.Errorf("%s %s on %q: %v, want %v", name, tc.role, tc.ns, got, tc.want)
		}
	}
	// Visibility: the publish-only and review-only rules show nothing; the
	// read and admin ones do.
	for _, tc := range []struct {
		c    *skillserver.Caller
		path string
		want bool
	}{
		{billing, "acme/billing/x", false},
		{reviewer, "acme/billing/x", false},
		{reader, "acme/tools/x", true},
		{root, "acme/billing/x", true},
	} {
		if got := rules.Visible(tc.c, sk(t, tc.path, "")); got != tc.want {
			t.Errorf("%s sees %s: %v, want %v", tc.c.Subject, tc.path, got, tc.want)
		}
	}
}

func TestRolesRefused(t *testing.T) {
	for _, tc := range []struct{ rules, want string }{
		{`{"rules": [{"group": "g", "roles": ["owner"]}]}`, `"owner" is not a role`},
		{`{"rules": [{"anyone": true, "roles": ["publish"]}]}`, `grants "publish" to anyone`},
		{`{"rules": [{"group": "g", "roles": ["review"], "metadata": {"team": "x"}}]}`, `grants "review" by metadata`},
	} {
		_, err := access.Parse("rules.jsonc", []byte(tc.rules))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rules.jsonc") {
			t.Errorf("%s: %v, want %q", tc.rules, err, tc.want)
		}
	}
}
