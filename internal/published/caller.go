package published

import (
	"context"
	"slices"
	"strings"
)

// Caller is who a request comes from, for sources whose answer depends on
// it (per-user catalogs, authorization). The server puts one in the
// context of every request it hands a source; a nil *Caller means an
// anonymous caller.
type Caller struct {
	// Subject identifies the user or workload, e.g. an OAuth "sub".
	Subject string
	// Scopes are the scopes the caller's credential grants.
	Scopes []string
	// Groups are the groups the caller belongs to.
	Groups []string
}

// Key identifies what a caller may see: its subject, scopes and groups,
// the latter two in sorted order. Two requests with the same key are
// answered from the same view; nil (anonymous) has the key "".
func (c *Caller) Key() string {
	if c == nil {
		return ""
	}
	scopes, groups := slices.Clone(c.Scopes), slices.Clone(c.Groups)
	slices.Sort(scopes)
	slices.Sort(groups)
	return "s:" + c.Subject + "\x00" + strings.Join(scopes, " ") + "\x00" + strings.Join(groups, " ")
}

type callerKey struct{}

// ContextWithCaller returns a context carrying c.
func ContextWithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFromContext returns the caller a request came from, or nil for an
// anonymous one.
func CallerFromContext(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}
