package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/internal/skilltest"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/skillserver"
)

func skillTree(t *testing.T, name, body string) string {
	t.Helper()
	return skilltest.WriteTree(t, map[string]string{
		name + "/SKILL.md": "---\nname: " + name + "\ndescription: A skill for governance tests <with> & markup.\n---\n" + body + "\n",
	})
}

// roles is an Allow function granting each role on the namespaces listed.
func roles(grants map[string][]string) func(role, ns string) bool {
	return func(role, ns string) bool {
		for _, g := range grants[role] {
			if ns == g || strings.HasPrefix(ns, g+"/") {
				return true
			}
		}
		return false
	}
}

func count(t *testing.T, conn *pgx.Conn, query string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func auditRows(t *testing.T, conn *pgx.Conn) []registry.AuditRecord {
	t.Helper()
	var out []registry.AuditRecord
	if err := registry.Audit(context.Background(), conn, time.Time{}, func(r registry.AuditRecord) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPublishForbidden: a publish outside the publisher's namespaces is
// refused naming the namespace and the role, writes nothing but the
// refused attempt in the audit log; inside them it publishes.
func TestPublishForbidden(t *testing.T) {
	ctx := context.Background()
	conn := connect(t, newDB(t))
	dir := skillTree(t, "notes", "v1")
	alice := roles(map[string][]string{registry.RolePublish: {"acme/billing"}})
	_, err := registry.Publish(ctx, conn, openCat(t, dir, "acme/tools"), &registry.PublishOptions{Publisher: "alice", From: "192.0.2.7", Allow: alice})
	var fe *registry.ForbiddenError
	if !errors.As(err, &fe) || !errors.Is(err, registry.ErrForbidden) || fe.Namespace != "acme/tools" || fe.Role != registry.RolePublish ||
		!strings.Contains(err.Error(), `namespace "acme/tools"`) || !strings.Contains(err.Error(), "publish role") {
		t.Fatalf("publish outside alice's namespaces: %v", err)
	}
	for _, table := range []string{"versions", "skills", "namespaces", "blobs"} {
		if n := count(t, conn, "SELECT count(*) FROM "+table); n != 0 {
			t.Errorf("the refused publish wrote %d rows into %s", n, table)
		}
	}
	rows := auditRows(t, conn)
	if len(rows) != 1 || rows[0].Outcome != "refused" || rows[0].Action != "publish" || rows[0].Who != "alice" || rows[0].Namespace != "acme/tools" || rows[0].From != "192.0.2.7" {
		t.Fatalf("audit after the refused publish: %+v", rows)
	}
	res, err := registry.Publish(ctx, conn, openCat(t, dir, "acme/billing"), &registry.PublishOptions{Publisher: "alice", Allow: alice})
	if err != nil || len(res.Added) != 1 || res.Review != registry.ReviewOff {
		t.Fatalf("publish inside alice's namespace: %+v, %v", res, err)
	}
	// Rollback and yank need the publish role on the skill's namespace.
	bob := registry.Actor{Who: "bob", Allow: roles(map[string][]string{registry.RolePublish: {"other"}})}
	if err := registry.YankAs(ctx, conn, "acme/billing/notes", 1, "no", bob); !errors.Is(err, registry.ErrForbidden) {
		t.Errorf("bob yanking in acme/billing: %v", err)
	}
	if err := registry.RollbackAs(ctx, conn, "acme/billing/notes", 1, bob); !errors.Is(err, registry.ErrForbidden) {
		t.Errorf("bob rolling back in acme/billing: %v", err)
	}
	if err := registry.SetReviewMode(ctx, conn, "acme", registry.ReviewEnforce, bob); !errors.Is(err, registry.ErrForbidden) || !strings.Contains(err.Error(), "admin role") {
		t.Errorf("bob setting the review mode: %v", err)
	}
	if n := count(t, conn, "SELECT count(*) FROM versions WHERE yanked_at IS NOT NULL"); n != 0 {
		t.Errorf("a refused yank yanked")
	}
	var got []string
	for _, r := range auditRows(t, conn) {
		got = append(got, r.Action+":"+r.Who+":"+r.Outcome+":"+r.Namespace)
	}
	want := "publish:alice:refused:acme/tools publish:alice:ok:acme/billing yank:bob:refused:acme/billing rollback:bob:refused:acme/billing review-mode:bob:refused:acme"
	if strings.Join(got, " ") != want {
		t.Errorf("audit:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestReviewEnforce: with review enforced, a publish is pending and not
// served; its publisher cannot approve it; an approval naming another
// digest, or of content changed in the database, is refused; a reviewer's
// approval serves it; a rejection keeps it out for good.
func TestReviewEnforce(t *testing.T) {
	ctx := context.Background()
	dsn := newDB(t)
	conn := connect(t, dsn)
	admin := registry.Actor{Who: "root", From: "198.51.100.1"}
	if err := registry.SetReviewMode(ctx, conn, "acme", registry.ReviewEnforce, admin); err != nil {
		t.Fatal(err)
	}
	dir := skillTree(t, "notes", "version one")
	res := publish(t, conn, openCat(t, dir, "acme"), &registry.PublishOptions{Publisher: "alice"})
	if res.Review != registry.ReviewEnforce || len(res.Added) != 1 {
		t.Fatalf("publish under enforced review: %+v", res)
	}
	rs := openReplica(t, dsn)
	if n := len(rs.Snapshot().Skills()); n != 0 {
		t.Fatalf("a version pending review is served under enforce: %d skills", n)
	}
	vs, err := registry.Versions(ctx, conn, "acme/notes")
	if err != nil || len(vs) != 1 || vs[0].Review != registry.StatePending || vs[0].Current {
		t.Fatalf("versions: %+v, %v", vs, err)
	}
	// Publishing the same content again adds no second pending version.
	if res := publish(t, conn, openCat(t, dir, "acme"), &registry.PublishOptions{Publisher: "alice"}); len(res.Added)+len(res.Changed) != 0 || res.Unchanged != 1 {
		t.Errorf("re-publishing pending content: %+v", res)
	}
	// Nor can it be rolled back to.
	if err := registry.RollbackAs(ctx, conn, "acme/notes", 1, admin); !errors.Is(err, registry.ErrNotPending) {
		t.Errorf("rollback to a pending version under enforce: %v", err)
	}
	reviewer := registry.Actor{Who: "bob", From: "203.0.113.9", Allow: roles(map[string][]string{registry.RoleReview: {"acme"}})}
	digest := vs[0].Digest
	if err := registry.Approve(ctx, conn, "acme/notes", 1, digest, registry.Actor{Who: "alice"}); !errors.Is(err, registry.ErrSelfReview) {
		t.Errorf("the publisher approving: %v", err)
	}
	if err := registry.Approve(ctx, conn, "acme/notes", 1, digest, registry.Actor{Who: "carol", Allow: roles(map[string][]string{registry.RolePublish: {"acme"}})}); !errors.Is(err, registry.ErrForbidden) || !strings.Contains(err.Error(), "review role") {
		t.Errorf("a publisher without the review role approving: %v", err)
	}
	if err := registry.Approve(ctx, conn, "acme/notes", 1, "sha256:"+strings.Repeat("0", 64), reviewer); !errors.Is(err, registry.ErrStale) {
		t.Errorf("an approval naming another digest: %v", err)
	}
	// The content changes in the database under the version's digest: the
	// approval no longer matches what would be served.
	if _, err := conn.Exec(ctx, `UPDATE versions SET manifest = replace(manifest::text, '"s":', '"s":1')::json WHERE path = 'acme/notes'`); err != nil {
		t.Fatal(err)
	}
	if err := registry.Approve(ctx, conn, "acme/notes", 1, digest, reviewer); !errors.Is(err, registry.ErrStale) || !strings.Contains(err.Error(), "changed in the database") {
		t.Errorf("approving content changed since publish: %v", err)
	}
	if n := len(rs.Snapshot().Skills()); n != 0 {
		t.Fatalf("refused approvals served the version")
	}
	if _, err := conn.Exec(ctx, `UPDATE versions SET manifest = replace(manifest::text, '"s":1', '"s":')::json WHERE path = 'acme/notes'`); err != nil {
		t.Fatal(err)
	}
	// The database refuses what the registry refuses, for whoever holds
	// its credentials.
	if _, err := conn.Exec(ctx, `UPDATE versions SET review = 'approved', reviewed_by = published_by, approved_digest = digest WHERE path = 'acme/notes'`); err == nil {
		t.Errorf("the database let the publisher approve their own version")
	}
	if _, err := conn.Exec(ctx, `UPDATE skills SET current = 1, digest = $1 WHERE path = 'acme/notes'`, digest); err == nil {
		t.Errorf("the database let a pending version be served under enforce")
	}
	gen := rs.Generation()
	if err := registry.Approve(ctx, conn, "acme/notes", 1, digest, reviewer); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, rs, gen)
	if sk := rs.Snapshot().Skills(); len(sk) != 1 || sk[0].Path != "acme/notes" {
		t.Fatalf("the approved version is not served: %v", sk)
	}
	if err := registry.Approve(ctx, conn, "acme/notes", 1, digest, reviewer); !errors.Is(err, registry.ErrNotPending) {
		t.Errorf("approving twice: %v", err)
	}

	// Version 2 is pending; version 1 stays served until it is reviewed.
	skilltest.WriteFile(t, dir+"/notes/SKILL.md", "---\nname: notes\ndescription: A skill for governance tests.\n---\nversion two\n")
	publish(t, conn, openCat(t, dir, "acme"), &registry.PublishOptions{Publisher: "alice"})
	if err := registry.Reject(ctx, conn, "acme/notes", 2, "", reviewer); err == nil {
		t.Errorf("a rejection without a reason")
	}
	if err := registry.Reject(ctx, conn, "acme/notes", 2, "calls curl | sh", reviewer); err != nil {
		t.Fatal(err)
	}
	if err := registry.RollbackAs(ctx, conn, "acme/notes", 2, admin); !errors.Is(err, registry.ErrNotPending) {
		t.Errorf("rollback to a rejected version: %v", err)
	}
	vs, _ = registry.Versions(ctx, conn, "acme/notes")
	if len(vs) != 2 || !vs[0].Current || vs[0].Review != registry.StateApproved || vs[0].ReviewedBy != "bob" || vs[1].Review != registry.StateRejected || vs[1].ReviewReason != "calls curl | sh" {
		t.Errorf("versions after the reviews: %+v", vs)
	}
	var got []string
	for _, r := range auditRows(t, conn) {
		got = append(got, r.Action+":"+r.Who+":"+r.Outcome)
	}
	want := "review-mode:root:ok publish:alice:ok rollback:root:refused approve:alice:refused approve:carol:refused approve:bob:refused approve:bob:refused approve:bob:ok approve:bob:refused publish:alice:ok reject:bob:refused reject:bob:ok rollback:root:refused"
	if strings.Join(got, " ") != want {
		t.Errorf("audit:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestReviewObserve: observe mode serves a publish at once, flagged
// pending; a rejection stops serving it (falling back to the previous
// version); turning enforce on stops serving what is still pending.
func TestReviewObserve(t *testing.T) {
	ctx := context.Background()
	dsn := newDB(t)
	conn := connect(t, dsn)
	dir := skillTree(t, "notes", "one")
	publish(t, conn, openCat(t, dir, "acme"), &registry.PublishOptions{Publisher: "alice"})
	if err := registry.SetReviewMode(ctx, conn, "", registry.ReviewObserve, registry.Actor{Who: "root"}); err != nil {
		t.Fatal(err)
	}
	skilltest.WriteFile(t, dir+"/notes/SKILL.md", "---\nname: notes\ndescription: A skill for governance tests.\n---\ntwo\n")
	if res := publish(t, conn, openCat(t, dir, "acme"), &registry.PublishOptions{Publisher: "alice"}); res.Review != registry.ReviewObserve {
		t.Fatalf("review mode: %q", res.Review)
	}
	rs := openReplica(t, dsn)
	vs, _ := registry.Versions(ctx, conn, "acme/notes")
	if len(vs) != 2 || !vs[1].Current || vs[1].Review != registry.StatePending || vs[0].Review != registry.StatePublished {
		t.Fatalf("observe mode: %+v", vs)
	}
	if !strings.Contains(rs.Snapshot().Skills()[0].Frontmatter.Description(), "governance tests.") {
		t.Fatalf("observe mode does not serve the pending version")
	}
	gen := rs.Generation()
	if err := registry.Reject(ctx, conn, "acme/notes", 2, "no", registry.Actor{Who: "bob"}); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, rs, gen)
	vs, _ = registry.Versions(ctx, conn, "acme/notes")
	if !vs[0].Current {
		t.Errorf("a rejected version served in observe mode does not fall back: %+v", vs)
	}
	// A third version, pending and served, then enforce.
	skilltest.WriteFile(t, dir+"/notes/SKILL.md", "---\nname: notes\ndescription: Three.\n---\nthree\n")
	publish(t, conn, openCat(t, dir, "acme"), &registry.PublishOptions{Publisher: "alice"})
	if err := registry.SetReviewMode(ctx, conn, "acme", registry.ReviewEnforce, registry.Actor{Who: "root"}); err != nil {
		t.Fatal(err)
	}
	vs, _ = registry.Versions(ctx, conn, "acme/notes")
	if !vs[0].Current || vs[2].Current {
		t.Errorf("enforce left a pending version served: %+v", vs)
	}
	if m, _ := registry.ReviewMode(ctx, conn, "acme/x"); m != registry.ReviewEnforce {
		t.Errorf("review mode of acme/x: %q", m)
	}
	if m, _ := registry.ReviewMode(ctx, conn, "acmex"); m != registry.ReviewObserve {
		t.Errorf("review mode of acmex: %q (acme's policy must stop at the segment)", m)
	}
}

// TestAuditAppendOnly: the audit log refuses updates, deletes and
// truncation, even from the registry's own database user.
func TestAuditAppendOnly(t *testing.T) {
	ctx := context.Background()
	conn := connect(t, newDB(t))
	publish(t, conn, openCat(t, skillTree(t, "notes", "x"), "acme"), nil)
	for _, q := range []string{`UPDATE events SET who = 'nobody'`, `DELETE FROM events`, `TRUNCATE events`} {
		if _, err := conn.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", q, err)
		}
	}
	since := time.Now().Add(time.Hour)
	if err := registry.Audit(ctx, conn, since, func(registry.AuditRecord) error { t.Error("a row before --since"); return nil }); err != nil {
		t.Fatal(err)
	}
	rows := auditRows(t, conn)
	if len(rows) != 1 || rows[0].From != "db:127.0.0.1" && rows[0].From != "db:local" {
		t.Errorf("audit of a publish with the database's credentials: %+v", rows)
	}
}

func waitGeneration(t *testing.T, rs *registry.Source, after int64) {
	t.Helper()
	waitFor(t, "the replica to follow a review", func() bool { return rs.Generation() > after })
}

// TestObservedEntryMeta: in observe mode a version served before review
// says so in its entry's _meta (skills/get and skills/list), and stops
// saying so once approved.
func TestObservedEntryMeta(t *testing.T) {
	ctx := context.Background()
	dsn := newDB(t)
	conn := connect(t, dsn)
	if err := registry.SetReviewMode(ctx, conn, "acme", registry.ReviewObserve, registry.Actor{Who: "root"}); err != nil {
		t.Fatal(err)
	}
	publish(t, conn, openCat(t, skillTree(t, "notes", "one"), "acme"), &registry.PublishOptions{Publisher: "alice"})
	rs := openReplica(t, dsn)
	s, _, err := skillserver.New(&mcp.Implementation{Name: "replica", Version: "0"}, rs, &skillserver.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	entries := func() (get, list string) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
		skillclient.Register(c)
		cs, err := c.Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		sc := skillclient.New(cs, nil)
		e, err := sc.Get(ctx, "skill://acme/notes/SKILL.md")
		if err != nil {
			t.Fatal(err)
		}
		for l, err := range sc.List(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			list = string(l.Meta)
		}
		return string(e.Meta), list
	}
	const flagged = `{"io.skillport/review":{"state":"pending"}}`
	if get, list := entries(); get != flagged || list != flagged {
		t.Errorf("entry _meta of a version served before review: get %s, list %s; want %s", get, list, flagged)
	}
	vs, _ := registry.Versions(ctx, conn, "acme/notes")
	gen := rs.Generation()
	if err := registry.Approve(ctx, conn, "acme/notes", 1, vs[0].Digest, registry.Actor{Who: "bob"}); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, rs, gen)
	if get, list := entries(); get != "" || list != "" {
		t.Errorf("entry _meta once approved: get %s, list %s; want none", get, list)
	}
}

// TestOlderSchema: a replica of this binary serves a database still at
// the schema before review states (its operator has not migrated yet),
// and listing versions says to migrate.
func TestOlderSchema(t *testing.T) {
	ctx := context.Background()
	dsn := newDB(t)
	conn := connect(t, dsn)
	publish(t, conn, openCat(t, skillTree(t, "notes", "x"), "acme"), nil)
	if _, err := conn.Exec(ctx, `ALTER TABLE versions DROP COLUMN review CASCADE; DELETE FROM skillport_migrations WHERE version >= 4`); err != nil {
		t.Fatal(err)
	}
	if sk := openReplica(t, dsn).Snapshot().Skills(); len(sk) != 1 {
		t.Errorf("a replica of the older schema serves %d skills, want 1", len(sk))
	}
	if _, err := registry.Versions(ctx, conn, "acme/notes"); err == nil || !strings.Contains(err.Error(), "run skillport registry migrate") {
		t.Errorf("versions on the older schema: %v", err)
	}
}
