// Package registry keeps Agent Skills in PostgreSQL so that many teams can
// publish into one place and many replicas can serve it.
//
// [Publish] stores a [*catalog.Catalog] as immutable skill versions in one
// transaction: file content is addressed by its SHA-256 digest and stored
// once, an unchanged skill gets no new version, and a publish owns the
// namespace (skill path prefix) it names, so that a skill missing from the
// published tree is removed inside that namespace only. [Open] returns a
// [Source], a published.Source for a replica: it keeps the current versions'
// metadata in memory, reads content by digest through a bounded cache, and
// learns of every change through LISTEN/NOTIFY. History and control
// ([Versions], [Diff], [Rollback], [Yank]) are recorded in an event log.
//
// The schema is created and upgraded by [Migrate] from versioned SQL files
// embedded in the binary.
package registry

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrConflict is returned when another publish changed the namespace
	// between the moment this publish read it and its commit: nothing was
	// published, and publishing again applies the change on top of the other.
	ErrConflict = errors.New("conflicting publish")
	// ErrOverlap is returned when a namespace would contain, or sit inside,
	// another team's namespace.
	ErrOverlap = errors.New("namespace overlaps another")
	// ErrCollision is returned when two sources of one publish hold the
	// same skill path.
	ErrCollision = errors.New("skill published by two sources")
	// ErrInvalid is returned when the published tree has skills that fail
	// validation: publishing it would remove them from the registry.
	ErrInvalid = errors.New("invalid skills in the published tree")
	// ErrTooLarge is returned when a publish exceeds [PublishOptions.MaxBytes].
	ErrTooLarge = errors.New("publish too large")
	// ErrUnknown is returned for a skill or version the registry does not hold.
	ErrUnknown = errors.New("not in the registry")
	// ErrYanked is returned when rolling back to a yanked version.
	ErrYanked = errors.New("version is yanked")
	// ErrSchema is returned when the database's schema is newer than this
	// binary knows.
	ErrSchema = errors.New("registry schema newer than this binary")
)

// Channel is the PostgreSQL notification channel a change is announced on;
// its payload is the new generation.
const Channel = "skillport_registry"

// IsDSN reports whether s names a PostgreSQL database (postgres:// or
// postgresql://) rather than a directory.
func IsDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	ents, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range ents {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("registry: migration %s: name must start with a number and _", e.Name())
		}
		b, err := fs.ReadFile(migrationFS, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, e.Name(), string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// SchemaVersion is the schema version this binary migrates to.
func SchemaVersion() int {
	m, err := migrations()
	if err != nil || len(m) == 0 {
		return 0
	}
	return m[len(m)-1].version
}

// Migrate brings the database's schema up to [SchemaVersion], applying each
// pending migration in its own transaction, and returns the versions it
// applied. Concurrent callers are serialised by an advisory lock, so two
// publishers starting on an empty database do not both create the schema.
func Migrate(ctx context.Context, conn *pgx.Conn) ([]int, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	// The common case, a schema already current, costs one query.
	var cur int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM skillport_migrations`).Scan(&cur); err == nil && cur == ms[len(ms)-1].version {
		return nil, nil
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(7365327)`); err != nil {
		return nil, dbError("migrate", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(7365327)`)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS skillport_migrations (
		version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, dbError("migrate", err)
	}
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM skillport_migrations`).Scan(&cur); err != nil {
		return nil, dbError("migrate", err)
	}
	if latest := ms[len(ms)-1].version; cur > latest {
		return nil, fmt.Errorf("registry: the database is at schema version %d, this binary knows up to %d: %w; upgrade skillport", cur, latest, ErrSchema)
	}
	var applied []int
	for _, m := range ms {
		if m.version <= cur {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("registry: migration %s: %w", m.name, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO skillport_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return applied, dbError("migrate", err)
		}
		applied = append(applied, m.version)
	}
	return applied, nil
}

// Connect opens one connection to the registry at dsn, with an error that
// names the database when it cannot be reached.
func Connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, connectError(dsn, err)
	}
	return conn, nil
}

// redact removes the password from a DSN for messages.
func redact(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "the registry database"
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

func dbError(what string, err error) error {
	if err == nil {
		return nil
	}
	if strings.HasPrefix(err.Error(), "registry:") {
		return err
	}
	if msg := err.Error(); strings.Contains(msg, "\n") {
		return &lineError{msg: fmt.Sprintf("registry: %s: %s", what, oneLine(msg)), err: err}
	}
	return fmt.Errorf("registry: %s: %w", what, err)
}
