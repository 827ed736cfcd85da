package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/skillport/skillport/internal/scan"
)

func sortChanges(cs []Change) {
	slices.SortFunc(cs, func(a, b Change) int { return cmp.Compare(a.Path, b.Path) })
}

// Version is one immutable version of a skill.
type Version struct {
	Path        string
	Namespace   string
	Version     int
	Digest      string
	Size        int64
	Files       int
	PublishedBy string
	PublishedAt time.Time
	Commit      string
	Current     bool
	YankedBy    string // "" unless yanked
	YankedAt    time.Time
	// Scanned is when the version was last scanned; zero when it never
	// was (published before scanning, or with scanning off).
	Scanned time.Time
	// Findings are the scanners' findings of the last scan.
	Findings []scan.Finding
	// Review is the version's review state: published (review off),
	// pending, approved or rejected.
	Review       string
	ReviewedBy   string // "" unless reviewed
	ReviewedAt   time.Time
	ReviewReason string // why it was rejected
}

// Versions lists a skill's versions, oldest first, with their review
// state and scan findings, in one statement.
func Versions(ctx context.Context, conn *pgx.Conn, path string) ([]Version, error) {
	out, err := versions(ctx, conn, path, true)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		// A schema older than scanning (registry migrate upgrades it):
		// nothing was ever scanned.
		out, err = versions(ctx, conn, path, false)
	}
	if err != nil {
		return nil, versionsError(err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("registry: skill %q: %w (skill paths look like acme/billing/refunds)", path, ErrUnknown)
	}
	return out, nil
}

// versions runs the statement of Versions, with the scans and findings
// tables or (scanning false) without.
func versions(ctx context.Context, conn *pgx.Conn, path string, scanning bool) ([]Version, error) {
	scans := `NULL::timestamptz, NULL::text`
	if scanning {
		// Ordered as the snapshot's findings are (source.go).
		scans = `(SELECT sc.scanned_at FROM scans sc WHERE sc.path = v.path AND sc.version = v.version),
		(SELECT json_agg(json_build_object('scanner', f.scanner, 'ruleId', f.rule_id, 'level', f.level, 'file', f.file, 'line', f.line, 'message', f.message)
			ORDER BY f.file, f.line, f.rule_id)::text FROM findings f WHERE f.path = v.path AND f.version = v.version)`
	}
	rows, err := conn.Query(ctx, `SELECT v.namespace, v.version, v.digest, v.size, v.files, v.published_by, v.published_at, v.source_commit,
		coalesce(s.current = v.version, false), coalesce(v.yanked_by, ''), coalesce(v.yanked_at, 'epoch'),
		v.review, coalesce(v.reviewed_by, ''), coalesce(v.reviewed_at, 'epoch'), v.review_reason, `+scans+`
		FROM versions v LEFT JOIN skills s ON s.path = v.path WHERE v.path = $1 ORDER BY v.version`, path)
	if err != nil {
		return nil, err
	}
	var out []Version
	for rows.Next() {
		v := Version{Path: path}
		var scanned *time.Time
		var findings []byte // NULL: none
		if err := rows.Scan(&v.Namespace, &v.Version, &v.Digest, &v.Size, &v.Files, &v.PublishedBy, &v.PublishedAt, &v.Commit, &v.Current, &v.YankedBy, &v.YankedAt,
			&v.Review, &v.ReviewedBy, &v.ReviewedAt, &v.ReviewReason, &scanned, &findings); err != nil {
			rows.Close()
			return nil, err
		}
		if scanned != nil {
			v.Scanned = *scanned
		}
		if findings != nil {
			if err := json.Unmarshal(findings, &v.Findings); err != nil {
				rows.Close()
				return nil, fmt.Errorf("the scan findings of %s version %d: %w", path, v.Version, err)
			}
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// versionsError says what to do about an error listing versions: on a
// schema older than the binary (a replica upgraded before the database),
// migrate.
func versionsError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42703" {
		return errors.New("registry: versions: the database's schema is older than this binary (it has no review states); run skillport registry migrate")
	}
	return dbError("versions", err)
}

// FileChange is one file that differs between two versions.
type FileChange struct {
	Path      string // below the skill root
	Change    string // "added", "removed" or "changed"
	OldSize   int64
	NewSize   int64
	OldDigest string
	NewDigest string
}

// Diff lists the files added, removed and changed from version a to b of
// a skill, by path.
func Diff(ctx context.Context, conn *pgx.Conn, path string, a, b int) ([]FileChange, error) {
	ma, err := versionManifest(ctx, conn, path, a)
	if err != nil {
		return nil, err
	}
	mb, err := versionManifest(ctx, conn, path, b)
	if err != nil {
		return nil, err
	}
	old := map[string]manifestFile{}
	for _, f := range ma.Files {
		old[f.Rel] = f
	}
	var out []FileChange
	for _, f := range mb.Files {
		o, ok := old[f.Rel]
		delete(old, f.Rel)
		switch {
		case !ok:
			out = append(out, FileChange{Path: f.Rel, Change: "added", NewSize: f.Size, NewDigest: f.Digest})
		case o.Digest != f.Digest:
			out = append(out, FileChange{Path: f.Rel, Change: "changed", OldSize: o.Size, NewSize: f.Size, OldDigest: o.Digest, NewDigest: f.Digest})
		}
	}
	for _, o := range old {
		out = append(out, FileChange{Path: o.Rel, Change: "removed", OldSize: o.Size, OldDigest: o.Digest})
	}
	slices.SortFunc(out, func(x, y FileChange) int { return cmp.Compare(x.Path, y.Path) })
	return out, nil
}

func versionManifest(ctx context.Context, conn *pgx.Conn, path string, v int) (manifest, error) {
	var m manifest
	var text string
	err := conn.QueryRow(ctx, `SELECT manifest::text FROM versions WHERE path = $1 AND version = $2`, path, v).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, fmt.Errorf("registry: %s version %d: %w; list them with skillport registry versions %s", path, v, ErrUnknown, path)
	}
	if err != nil {
		return m, dbError("diff", err)
	}
	return m, json.Unmarshal([]byte(text), &m)
}

// Rollback makes version v the current version of a skill (serving it
// again if it was removed), records who did it, and notifies replicas.
func Rollback(ctx context.Context, conn *pgx.Conn, path string, v int, who string) error {
	return RollbackAs(ctx, conn, path, v, Actor{Who: who})
}

// RollbackAs is [Rollback] as the actor, who needs the publish role on the
// skill's namespace. A version review has not released (pending where
// review is enforced, or rejected) cannot be made current.
func RollbackAs(ctx context.Context, conn *pgx.Conn, path string, v int, a Actor) error {
	return control(ctx, conn, path, v, a, "rollback", RolePublish, func(tx pgx.Tx, r versionRow) (string, error) {
		if r.yanked {
			return "", fmt.Errorf("registry: %s version %d: %w and cannot be served again; roll back to another version", path, v, ErrYanked)
		}
		if r.review == StateRejected {
			return "", fmt.Errorf("registry: %s version %d was rejected in review: %w; roll back to another version", path, v, ErrNotPending)
		}
		if r.review == StatePending {
			var mode string
			if err := tx.QueryRow(ctx, `SELECT skillport_review_mode($1)`, r.ns).Scan(&mode); err != nil {
				return "", err
			}
			if mode == ReviewEnforce {
				return "", fmt.Errorf("registry: %s version %d is pending review in %s, where review is enforced: %w; approve it (skillport registry approve %s %d) instead", path, v, nsName(r.ns), ErrNotPending, path, v)
			}
		}
		// A rollback changes the namespace: a publish planned before it conflicts.
		gen, err := changeNamespace(ctx, tx, r.ns)
		if err != nil {
			return "", err
		}
		_, err = tx.Exec(ctx, `UPDATE skills SET current = $2, digest = $3, generation = $4, updated_at = now() WHERE path = $1`, path, v, r.digest, gen)
		return "", err
	})
}

// lockSkill takes the lock of the skill's row for the rest of tx, before
// anything is decided: a yank and a rollback of one skill then run one
// after the other, and each reads (READ COMMITTED: every statement sees
// what committed before it) what the other did. Without it a rollback
// could read "not yanked", a yank commit and find the version not current,
// and the rollback then make the yanked version current. A skill without a
// row locks nothing; the statements after say it is unknown.
func lockSkill(ctx context.Context, tx pgx.Tx, path string) error {
	_, err := tx.Exec(ctx, `SELECT 1 FROM skills WHERE path = $1 FOR UPDATE`, path)
	return err
}

// Yank withdraws version v of a skill for good: it can no longer be served
// or rolled back to. If it is the current version, the skill falls back to
// its latest earlier version that is not yanked, else (after a rollback)
// to its latest later one, and stops being served only when no version is
// left ([Served] tells which). Only versions review released are fallen
// back to.
func Yank(ctx context.Context, conn *pgx.Conn, path string, v int, who, reason string) error {
	return YankAs(ctx, conn, path, v, reason, Actor{Who: who})
}

// YankAs is [Yank] as the actor, who needs the publish role on the
// skill's namespace.
func YankAs(ctx context.Context, conn *pgx.Conn, path string, v int, reason string, a Actor) error {
	return control(ctx, conn, path, v, a, "yank", RolePublish, func(tx pgx.Tx, r versionRow) (string, error) {
		if r.yanked {
			return "", fmt.Errorf("registry: %s version %d: %w or already yanked; list them with skillport registry versions %s", path, v, ErrUnknown, path)
		}
		if _, err := tx.Exec(ctx, `UPDATE versions SET yanked_at = now(), yanked_by = $3 WHERE path = $1 AND version = $2`, path, v, a.who()); err != nil {
			return "", err
		}
		gen, err := changeNamespace(ctx, tx, r.ns)
		if err != nil {
			return "", err
		}
		return reason, fallBack(ctx, tx, path, v, gen)
	})
}

// Event is one recorded change.
type Event struct {
	At      time.Time
	Who     string
	Action  string // publish, remove, rollback, yank, approve, reject, review-mode, roles
	Path    string
	Version int
	Detail  string
	// Outcome is "ok", or "refused" for an attempt the registry refused
	// (Detail says why).
	Outcome string
}

// Events returns the recorded changes of a skill, or of every skill when
// path is "", oldest first, at most limit of the latest.
func Events(ctx context.Context, conn *pgx.Conn, path string, limit int) ([]Event, error) {
	rows, err := conn.Query(ctx, `SELECT at, who, action, path, coalesce(version, 0), detail, outcome FROM
		(SELECT * FROM events WHERE $1 = '' OR path = $1 ORDER BY id DESC LIMIT $2) e ORDER BY id`, path, limit)
	if err != nil {
		return nil, dbError("events", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) {
		var e Event
		err := r.Scan(&e.At, &e.Who, &e.Action, &e.Path, &e.Version, &e.Detail, &e.Outcome)
		return e, err
	})
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
