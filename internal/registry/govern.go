package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/skillport/skillport/skill"
)

// The roles a caller may hold on a namespace (docs/registry-governance.md).
// Admin holds the other three.
const (
	RoleRead    = "read"
	RolePublish = "publish"
	RoleReview  = "review"
	RoleAdmin   = "admin"
)

// Review modes of a namespace ([SetReviewMode]).
const (
	ReviewOff     = "off"     // a publish is served at once
	ReviewObserve = "observe" // a publish is served at once, flagged pending until reviewed
	ReviewEnforce = "enforce" // a publish is served only once approved
)

// Review states of a version.
const (
	StatePublished = "published" // published with review off
	StatePending   = "pending"
	StateApproved  = "approved"
	StateRejected  = "rejected"
)

// More sentinel errors of governance; test with errors.Is.
var (
	// ErrForbidden is returned when the actor lacks the role a change
	// needs on its namespace ([ForbiddenError] says which); nothing was
	// changed.
	ErrForbidden = errors.New("forbidden")
	// ErrSelfReview is returned when a version's publisher reviews it.
	ErrSelfReview = errors.New("a publisher cannot review their own version")
	// ErrStale is returned when an approval names content the version no
	// longer holds (another digest than the reviewer saw, or a manifest
	// that no longer matches the version's digest).
	ErrStale = errors.New("approval does not match the version's content")
	// ErrNotPending is returned when approving or rejecting a version that
	// is not pending review, or rolling back to one review has not
	// released.
	ErrNotPending = errors.New("not pending review")
	// ErrNoReason is returned when a rejection gives no reason.
	ErrNoReason = errors.New("a rejection needs a reason")
)

// ForbiddenError is the refusal of a change for want of a role.
type ForbiddenError struct {
	Who, Role, Namespace, Action string
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("registry: %s in %s needs the %s role there, which %s does not hold: %v; ask an admin of the namespace to grant it in the rules file",
		e.Action, nsName(e.Namespace), e.Role, e.Who, ErrForbidden)
}

// Is makes errors.Is(err, ErrForbidden) hold.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// Actor is who asks for a change, from where, and what they may do.
type Actor struct {
	// Who is recorded with the change ("unknown" when empty).
	Who string
	// From is where the request came from (a client's address); empty
	// means the database client's address, as PostgreSQL sees it.
	From string
	// Allow decides whether Who holds role on namespace ns. Nil allows
	// everything: whoever holds the database's credentials is an operator.
	Allow func(role, ns string) bool
}

func (a Actor) who() string { return orUnknown(a.Who) }

// may returns a [ForbiddenError] when a lacks role on ns.
func (a Actor) may(role, ns, action string) error {
	if a.Allow == nil || a.Allow(role, ns) || a.Allow(RoleAdmin, ns) {
		return nil
	}
	return &ForbiddenError{Who: a.who(), Role: role, Namespace: ns, Action: action}
}

// refusal reports whether err refuses a request (recorded in the audit log
// as such) rather than failing it (a database error).
func refusal(err error) bool {
	for _, e := range []error{ErrForbidden, ErrSelfReview, ErrStale, ErrNotPending, ErrNoReason, ErrYanked, ErrUnknown, ErrConflict, ErrOverlap, ErrInvalid, ErrTooLarge, ErrCollision} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// maxDetail bounds the text an audit row keeps of a refusal's reason.
const maxDetail = 1024

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// record appends one row to the audit log.
func record(ctx context.Context, q execer, a Actor, action, ns, path string, v int, detail, outcome string) error {
	if len(detail) > maxDetail {
		detail = detail[:maxDetail]
	}
	var ver any
	if v > 0 {
		ver = v
	}
	_, err := q.Exec(ctx, `INSERT INTO events (who, action, namespace, path, version, detail, outcome, origin)
		VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce(nullif($8, ''), 'db:' || coalesce(host(inet_client_addr()), 'local')))`,
		a.who(), action, ns, path, ver, detail, outcome, a.From)
	return err
}

// refused records err, when it refuses the request, as a refused attempt
// (its own statement: the transaction that decided has rolled back), and
// returns err.
func refused(ctx context.Context, conn *pgx.Conn, a Actor, action, ns, path string, v int, err error) error {
	if err == nil || !refusal(err) {
		return err
	}
	if rerr := record(context.WithoutCancel(ctx), conn, a, action, ns, path, v, err.Error(), "refused"); rerr != nil {
		return fmt.Errorf("%w (recording the refusal failed too: %v)", err, rerr)
	}
	return err
}

// RecordRefusal records in the audit log an attempt refused before the
// registry was asked (a bad request, say): detail says why.
func RecordRefusal(ctx context.Context, conn *pgx.Conn, a Actor, action, ns, path string, v int, detail string) error {
	if _, err := Migrate(ctx, conn); err != nil {
		return err
	}
	return dbError("audit", record(context.WithoutCancel(ctx), conn, a, action, ns, path, v, detail, "refused"))
}

// versionRow is what review and control read of one version, under the
// skill's lock.
type versionRow struct {
	ns, digest, review, publishedBy string
	yanked                          bool
	current                         int // the skill's current version, 0 when none
}

func readVersion(ctx context.Context, tx pgx.Tx, path string, v int) (versionRow, error) {
	var r versionRow
	err := tx.QueryRow(ctx, `SELECT v.namespace, v.digest, v.review, v.published_by, v.yanked_at IS NOT NULL, coalesce(s.current, 0)
		FROM versions v LEFT JOIN skills s ON s.path = v.path WHERE v.path = $1 AND v.version = $2`, path, v).
		Scan(&r.ns, &r.digest, &r.review, &r.publishedBy, &r.yanked, &r.current)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("registry: %s version %d: %w; list them with skillport registry versions %s", path, v, ErrUnknown, path)
	}
	return r, err
}

// namespaceOf returns the namespace of a skill the registry holds, "" and
// no error when it holds none (the caller's next read says unknown).
func namespaceOf(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, path string) string {
	var ns string
	q.QueryRow(ctx, `SELECT namespace FROM versions WHERE path = $1 LIMIT 1`, path).Scan(&ns)
	return ns
}

// Approve releases version v of a skill, pending review, as the actor
// (who needs the review role on its namespace and must not be its
// publisher). digest is the version digest the reviewer reviewed: an
// approval of other content than the version holds is refused
// ([ErrStale]), as is one of a version whose stored manifest no longer
// adds up to its digest. Where review is enforced the version then
// becomes current, unless a later version already is.
func Approve(ctx context.Context, conn *pgx.Conn, path string, v int, digest string, a Actor) error {
	return review(ctx, conn, path, v, StateApproved, digest, "", a)
}

// Reject refuses version v of a skill, pending review, with a reason, as
// the actor (who needs the review role and must not be its publisher). A
// rejected version is never served: if it was (observe mode), the skill
// falls back as after a yank.
func Reject(ctx context.Context, conn *pgx.Conn, path string, v int, reason string, a Actor) error {
	return review(ctx, conn, path, v, StateRejected, "", reason, a)
}

func review(ctx context.Context, conn *pgx.Conn, path string, v int, state, digest, reason string, a Actor) error {
	action := map[string]string{StateApproved: "approve", StateRejected: "reject"}[state]
	return control(ctx, conn, path, v, a, action, RoleReview, func(tx pgx.Tx, r versionRow) (string, error) {
		switch {
		case state == StateRejected && strings.TrimSpace(reason) == "":
			return "", fmt.Errorf("registry: rejecting %s version %d: %w (--reason); the publisher reads it", path, v, ErrNoReason)
		case r.review != StatePending:
			return "", fmt.Errorf("registry: %s version %d is %s: %w", path, v, r.review, ErrNotPending)
		case r.yanked:
			return "", fmt.Errorf("registry: %s version %d: %w", path, v, ErrYanked)
		case r.publishedBy == a.who():
			return "", fmt.Errorf("registry: %s version %d was published by %s: %w; another reviewer of %s must", path, v, r.publishedBy, ErrSelfReview, nsName(r.ns))
		}
		if state == StateApproved {
			if digest != r.digest {
				return "", fmt.Errorf("registry: %s version %d holds %s, not the %s reviewed: %w; review the version again", path, v, r.digest, digest, ErrStale)
			}
			if got, err := storedDigest(ctx, tx, path, v); err != nil {
				return "", err
			} else if got != r.digest {
				return "", fmt.Errorf("registry: %s version %d: its stored files add up to %s, not its digest %s (changed in the database since it was published): %w; publish it again", path, v, got, r.digest, ErrStale)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE versions SET review = $3, reviewed_by = $4, reviewed_at = now(), review_reason = $5,
			approved_digest = CASE WHEN $3 = 'approved' THEN digest END WHERE path = $1 AND version = $2`, path, v, state, a.who(), reason); err != nil {
			return "", err
		}
		detail := reason
		if state == StateApproved {
			detail = digest
		}
		switch {
		case state == StateApproved && r.current <= v:
			// Served from now on; also when it is served already (observe
			// mode): replicas re-read it and stop flagging it pending.
			gen, err := changeNamespace(ctx, tx, r.ns)
			if err != nil {
				return "", err
			}
			_, err = tx.Exec(ctx, `UPDATE skills SET current = $2, digest = $3, generation = $4, updated_at = now() WHERE path = $1`, path, v, r.digest, gen)
			return detail, err
		case state == StateRejected && r.current == v:
			gen, err := changeNamespace(ctx, tx, r.ns)
			if err != nil {
				return "", err
			}
			return detail, fallBack(ctx, tx, path, v, gen)
		}
		return detail, nil
	})
}

// control makes a change to version v of a skill as the actor, who needs
// role on its namespace: in one transaction it locks the skill, reads the
// version, checks the role and calls change, then records the change with
// the detail change returns. A refusal is recorded as refused.
func control(ctx context.Context, conn *pgx.Conn, path string, v int, a Actor, action, role string, change func(pgx.Tx, versionRow) (string, error)) error {
	var ns string
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := lockSkill(ctx, tx, path); err != nil {
			return err
		}
		r, err := readVersion(ctx, tx, path, v)
		if err != nil {
			return err
		}
		ns = r.ns
		if err := a.may(role, ns, action+" of "+path); err != nil {
			return err
		}
		detail, err := change(tx, r)
		if err != nil {
			return err
		}
		return record(ctx, tx, a, action, ns, path, v, detail, "ok")
	})
	if ns == "" && err != nil {
		ns = namespaceOf(ctx, conn, path)
	}
	return refused(ctx, conn, a, action, ns, path, v, dbError(action, err))
}

// changeNamespace starts a new generation, notifying replicas, and moves
// namespace ns to its next revision, so that a publish planned before
// this change conflicts.
func changeNamespace(ctx context.Context, tx pgx.Tx, ns string) (int64, error) {
	gen, err := bump(ctx, tx)
	if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `UPDATE namespaces SET revision = revision + 1 WHERE prefix = $1`, ns)
	return gen, err
}

// fallBack makes the skill serve its latest released version other than
// v: an earlier one first, else a later one, else none.
func fallBack(ctx context.Context, tx pgx.Tx, path string, v int, gen int64) error {
	_, err := tx.Exec(ctx, `UPDATE skills s SET current = f.version, digest = coalesce(f.digest, ''), generation = $3, updated_at = now()
		FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT version, digest FROM versions
			WHERE path = $1 AND version <> $2 AND yanked_at IS NULL AND review IN ('published', 'approved')
			ORDER BY version < $2 DESC, version DESC LIMIT 1) f ON true
		WHERE s.path = $1 AND s.current = $2`, path, v, gen)
	return err
}

// storedDigest recomputes a version's digest from its stored manifest, as
// the publish computed it from the tree.
func storedDigest(ctx context.Context, tx pgx.Tx, path string, v int) (string, error) {
	var text string
	if err := tx.QueryRow(ctx, `SELECT manifest::text FROM versions WHERE path = $1 AND version = $2`, path, v).Scan(&text); err != nil {
		return "", err
	}
	var m manifest
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return "", fmt.Errorf("registry: the manifest of %s version %d: %w", path, v, err)
	}
	var fm skill.Frontmatter
	if err := json.Unmarshal(m.Frontmatter, &fm); err != nil {
		return "", fmt.Errorf("registry: the frontmatter of %s version %d: %w", path, v, err)
	}
	m.Frontmatter = fm.JSON()
	return m.digest(), nil
}

// ReviewMode returns the review mode of namespace ns.
func ReviewMode(ctx context.Context, conn *pgx.Conn, ns string) (string, error) {
	if _, err := Migrate(ctx, conn); err != nil {
		return "", err
	}
	var mode string
	err := conn.QueryRow(ctx, `SELECT skillport_review_mode($1)`, ns).Scan(&mode)
	return mode, dbError("review mode", err)
}

// SetReviewMode sets the review mode of the namespaces at or under prefix
// ("" is every namespace) that no longer prefix sets, as the actor (who
// needs the admin role on prefix). Turning enforce on stops serving the
// versions there still pending review: their skills fall back to their
// latest released version.
func SetReviewMode(ctx context.Context, conn *pgx.Conn, prefix, mode string, a Actor) error {
	if mode != ReviewOff && mode != ReviewObserve && mode != ReviewEnforce {
		return fmt.Errorf("registry: review mode %q: it is off, observe or enforce", mode)
	}
	if _, err := Migrate(ctx, conn); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := a.may(RoleAdmin, prefix, "setting the review mode"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO review_policies (prefix, mode, set_by) VALUES ($1, $2, $3)
			ON CONFLICT (prefix) DO UPDATE SET mode = $2, set_by = $3, set_at = now()`, prefix, mode, a.who()); err != nil {
			return err
		}
		if mode == ReviewEnforce {
			rows, err := tx.Query(ctx, `SELECT s.path, s.current FROM skills s JOIN versions v ON v.path = s.path AND v.version = s.current
				WHERE v.review = 'pending' AND skillport_review_mode(s.namespace) = 'enforce' FOR UPDATE OF s`)
			if err != nil {
				return err
			}
			type pc struct {
				Path string
				V    int
			}
			pending, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pc])
			if err != nil {
				return err
			}
			if len(pending) > 0 {
				gen, err := bump(ctx, tx)
				if err != nil {
					return err
				}
				for _, p := range pending {
					if err := fallBack(ctx, tx, p.Path, p.V, gen); err != nil {
						return err
					}
				}
			}
		}
		return record(ctx, tx, a, "review-mode", prefix, "", 0, mode, "ok")
	})
	return refused(ctx, conn, a, "review-mode", prefix, "", 0, dbError("review mode", err))
}

// RecordRoles records in the audit log that the roles in force changed:
// a replica accepting changes calls it when it starts with rules whose
// digest differs from the last one recorded, so that every change of the
// rules file is in the log, with the replica that noticed it.
func RecordRoles(ctx context.Context, conn *pgx.Conn, digest, source string, a Actor) (changed bool, err error) {
	if _, err := Migrate(ctx, conn); err != nil {
		return false, err
	}
	var last string
	err = conn.QueryRow(ctx, `SELECT detail FROM events WHERE action = 'roles' ORDER BY id DESC LIMIT 1`).Scan(&last)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, dbError("roles", err)
	}
	detail := digest + " " + source
	if last == detail {
		return false, nil
	}
	return true, dbError("roles", record(ctx, conn, a, "roles", "", "", 0, detail, "ok"))
}

// AuditRecord is one row of the audit log.
type AuditRecord struct {
	ID        int64     `json:"id"`
	At        time.Time `json:"at"`
	Who       string    `json:"who"`
	Action    string    `json:"action"`
	Outcome   string    `json:"outcome"`
	Namespace string    `json:"namespace,omitempty"`
	Path      string    `json:"skill,omitempty"`
	Version   int       `json:"version,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	From      string    `json:"from"`
}

// Audit calls fn with every row of the audit log recorded at or after
// since, oldest first, streaming them (the log may be large).
func Audit(ctx context.Context, conn *pgx.Conn, since time.Time, fn func(AuditRecord) error) error {
	if _, err := Migrate(ctx, conn); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, `SELECT id, at, who, action, outcome, namespace, path, coalesce(version, 0), detail, origin
		FROM events WHERE at >= $1 ORDER BY id`, since)
	if err != nil {
		return dbError("audit", err)
	}
	defer rows.Close()
	var r AuditRecord
	for rows.Next() {
		if err := rows.Scan(&r.ID, &r.At, &r.Who, &r.Action, &r.Outcome, &r.Namespace, &r.Path, &r.Version, &r.Detail, &r.From); err != nil {
			return dbError("audit", err)
		}
		r.At = r.At.UTC()
		if err := fn(r); err != nil {
			return err
		}
	}
	return dbError("audit", rows.Err())
}

// Versions lists a skill's versions as [Versions] does, through the
// replica's connections and within its query timeout: for the web
// catalog's skill pages.
func (s *Source) Versions(ctx context.Context, path string) ([]Version, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, dbError("versions", err)
	}
	defer c.Release()
	return Versions(ctx, c.Conn(), path)
}
