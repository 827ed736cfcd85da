package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/skill"
)

// DefaultMaxPublishBytes bounds the new content one publish may store.
const DefaultMaxPublishBytes = 4 << 30

// PublishOptions configure [Publish]. The zero value is usable.
type PublishOptions struct {
	// Publisher names who publishes; it is recorded with every version and
	// event. Empty means "unknown".
	Publisher string
	// Commit is the source control commit the tree came from, recorded
	// with every new version.
	Commit string
	// MaxBytes bounds the content not yet in the registry that one publish
	// may store (default 4 GiB); a larger publish fails before anything is
	// written.
	MaxBytes int64

	beforeCommit func(tx pgx.Tx) // test hook: runs just before COMMIT
}

// Change is one skill added, changed or removed by a publish.
type Change struct {
	Path    string
	Version int // the new version; for a removal, the version that was current
	Files   int
	Size    int64
}

// PublishResult says what a publish changed.
type PublishResult struct {
	Namespace               string
	Added, Changed, Removed []Change
	Unchanged               int
	// BlobsStored and BytesStored count the content that was new to the
	// registry; the rest was already stored by digest.
	BlobsStored int
	BytesStored int64
	// Generation is the registry's generation after the publish (unchanged
	// when nothing changed).
	Generation int64
}

// manifest is what a version records of a skill besides its content.
type manifest struct {
	Frontmatter json.RawMessage `json:"frontmatter"`
	Files       []manifestFile  `json:"files"`
}

type manifestFile struct {
	Rel    string `json:"p"` // URI path below the skill root
	Name   string `json:"n"`
	Digest string `json:"d"`
	Size   int64  `json:"s"`
	MIME   string `json:"m"`
	Text   bool   `json:"t,omitempty"`
}

func manifestOf(s *catalog.Skill) manifest {
	m := manifest{Frontmatter: s.Frontmatter.JSON(), Files: make([]manifestFile, len(s.Files))}
	for i, f := range s.Files {
		m.Files[i] = manifestFile{Rel: strings.TrimPrefix(f.URI, s.Root+"/"), Name: f.Name, Digest: f.Digest, Size: f.Size, MIME: f.MIMEType, Text: f.Text}
	}
	return m
}

// digest identifies a version's content: frontmatter and files.
func (m manifest) digest() string {
	h := sha256.New()
	h.Write(m.Frontmatter)
	buf := make([]byte, 0, 256)
	for _, f := range m.Files {
		buf = append(buf[:0], '\n')
		buf = append(buf, f.Rel...)
		buf = append(buf, 0)
		buf = append(buf, f.Digest...)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, f.Size, 10)
		h.Write(buf)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

type currentSkill struct {
	current    int // 0 when removed
	digest     string
	maxVersion int
}

// Publish stores cat's skills in the registry as the namespace named by its
// prefix (cat.Options().Prefix; "" is the root namespace, which excludes
// every other). In one transaction it stores new content by digest, creates
// a version of each added or changed skill, and removes the namespace's
// skills missing from cat; then it notifies replicas. It migrates an empty
// database first.
//
// It refuses a catalog that left out invalid skills ([ErrInvalid]), a
// namespace overlapping another ([ErrOverlap]), content over
// opts.MaxBytes ([ErrTooLarge]), and a publish that raced another of the
// same namespace ([ErrConflict]); in every case nothing is written.
func Publish(ctx context.Context, conn *pgx.Conn, cat *catalog.Catalog, opts *PublishOptions) (*PublishResult, error) {
	var o PublishOptions
	if opts != nil {
		o = *opts
	}
	if o.Publisher == "" {
		o.Publisher = "unknown"
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxPublishBytes
	}
	if err := invalid(cat); err != nil {
		return nil, err
	}
	if cat.Options().Scheme != "" && cat.Options().Scheme != catalog.DefaultScheme {
		return nil, fmt.Errorf("registry: only %s:// skills can be published (the catalog uses %s://)", catalog.DefaultScheme, cat.Options().Scheme)
	}
	if _, err := Migrate(ctx, conn); err != nil {
		return nil, err
	}
	ns := cat.Options().Prefix
	res := &PublishResult{Namespace: ns}

	// Read the namespace as it is now; the commit fails if it moved since.
	revision := int64(-1)
	err := conn.QueryRow(ctx, `SELECT revision FROM namespaces WHERE prefix = $1`, ns).Scan(&revision)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, dbError("publish", err)
	}
	cur := map[string]currentSkill{}
	rows, err := conn.Query(ctx, `SELECT s.path, coalesce(s.current, 0), coalesce(v.digest, ''), m.max
		FROM skills s LEFT JOIN versions v ON v.path = s.path AND v.version = s.current
		JOIN (SELECT path, max(version) AS max FROM versions WHERE namespace = $1 GROUP BY path) m ON m.path = s.path
		WHERE s.namespace = $1`, ns)
	if err != nil {
		return nil, dbError("publish", err)
	}
	for rows.Next() {
		var p string
		var c currentSkill
		if err := rows.Scan(&p, &c.current, &c.digest, &c.maxVersion); err != nil {
			return nil, dbError("publish", err)
		}
		cur[p] = c
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("publish", err)
	}

	type newVersion struct {
		s       *catalog.Skill
		m       []byte
		digest  string
		version int
	}
	var news []newVersion
	published := map[string]bool{}
	digests := map[string]*catalog.File{}
	for _, s := range cat.Skills() {
		published[s.Path] = true
		m := manifestOf(s)
		d := m.digest()
		c, ok := cur[s.Path]
		if ok && c.current != 0 && c.digest == d {
			res.Unchanged++
			continue
		}
		mb, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		nv := newVersion{s: s, m: mb, digest: d, version: c.maxVersion + 1}
		news = append(news, nv)
		ch := Change{Path: s.Path, Version: nv.version, Files: len(s.Files), Size: s.Size}
		if ok && c.current != 0 {
			res.Changed = append(res.Changed, ch)
		} else {
			res.Added = append(res.Added, ch)
		}
		for _, f := range s.Files {
			digests[f.Digest] = f
		}
	}
	for p, c := range cur {
		if c.current != 0 && !published[p] {
			res.Removed = append(res.Removed, Change{Path: p, Version: c.current})
		}
	}
	sortChanges(res.Removed)
	if len(news) == 0 && len(res.Removed) == 0 && revision >= 0 {
		err := conn.QueryRow(ctx, `SELECT generation FROM registry_state`).Scan(&res.Generation)
		return res, dbError("publish", err)
	}

	// Content the registry does not hold yet.
	want := make([]string, 0, len(digests))
	for d := range digests {
		want = append(want, d)
	}
	have := map[string]bool{}
	rows, err = conn.Query(ctx, `SELECT digest FROM blobs WHERE digest = ANY($1)`, want)
	if err != nil {
		return nil, dbError("publish", err)
	}
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, dbError("publish", err)
		}
		have[d] = true
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("publish", err)
	}
	var missing []*catalog.File
	for _, d := range want {
		if !have[d] {
			f := digests[d]
			missing = append(missing, f)
			res.BlobsStored++
			res.BytesStored += f.Size
		}
	}
	if res.BytesStored > o.MaxBytes {
		return nil, fmt.Errorf("registry: publishing %s would store %d bytes of new content, over the limit of %d: %w; publish smaller trees or raise the limit", nsName(ns), res.BytesStored, o.MaxBytes, ErrTooLarge)
	}

	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if revision < 0 {
			if err := createNamespace(ctx, tx, ns, o.Publisher); err != nil {
				return err
			}
			revision = 0
		}
		tag, err := tx.Exec(ctx, `UPDATE namespaces SET revision = revision + 1 WHERE prefix = $1 AND revision = $2`, ns, revision)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("registry: %s was published by someone else while this publish ran: %w; nothing was published, run publish again", nsName(ns), ErrConflict)
		}
		if len(missing) > 0 {
			if err := storeBlobs(ctx, tx, cat, missing); err != nil {
				return err
			}
		}
		// The generation row is locked from here to COMMIT: the heavy
		// work (content) is done above, outside that lock.
		gen, err := bump(ctx, tx)
		res.Generation = gen
		if err != nil {
			return err
		}
		if len(news) > 0 {
			rowsV := make([][]any, len(news))
			for i, n := range news {
				rowsV[i] = []any{n.s.Path, n.version, ns, n.digest, n.s.Size, len(n.s.Files), string(n.m), o.Publisher, o.Commit}
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"versions"},
				[]string{"path", "version", "namespace", "digest", "size", "files", "manifest", "published_by", "source_commit"},
				pgx.CopyFromRows(rowsV)); err != nil {
				return err
			}
			paths := make([]string, len(news))
			vers := make([]int32, len(news))
			for i, n := range news {
				paths[i], vers[i] = n.s.Path, int32(n.version)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO skills (path, namespace, current, generation)
				SELECT p, $3, v, $4 FROM unnest($1::text[], $2::int[]) AS t(p, v)
				ON CONFLICT (path) DO UPDATE SET current = excluded.current, generation = excluded.generation, updated_at = now()`, paths, vers, ns, gen); err != nil {
				return err
			}
		}
		if len(res.Removed) > 0 {
			paths := make([]string, len(res.Removed))
			for i, r := range res.Removed {
				paths[i] = r.Path
			}
			if _, err := tx.Exec(ctx, `UPDATE skills SET current = NULL, generation = $3, updated_at = now() WHERE namespace = $1 AND path = ANY($2)`, ns, paths, gen); err != nil {
				return err
			}
		}
		var evs [][]any
		for _, c := range res.Added {
			evs = append(evs, []any{o.Publisher, "publish", c.Path, int32(c.Version), "added " + o.Commit})
		}
		for _, c := range res.Changed {
			evs = append(evs, []any{o.Publisher, "publish", c.Path, int32(c.Version), "changed " + o.Commit})
		}
		for _, c := range res.Removed {
			evs = append(evs, []any{o.Publisher, "remove", c.Path, int32(c.Version), "missing from the published tree"})
		}
		if len(evs) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, []string{"who", "action", "path", "version", "detail"}, pgx.CopyFromRows(evs)); err != nil {
				return err
			}
		}
		if o.beforeCommit != nil {
			o.beforeCommit(tx)
		}
		return nil
	})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return nil, fmt.Errorf("registry: another publish stored a version of the same skill while this publish of %s ran: %w; nothing was published, run publish again", nsName(ns), ErrConflict)
		}
		return nil, dbError("publish (nothing was published)", err)
	}
	if len(news) >= 1000 {
		// Fresh statistics after a bulk publish keep the planner from
		// nested-looping over the namespace on the next one.
		if _, err := conn.Exec(ctx, `ANALYZE skills, versions`); err != nil {
			return nil, dbError("publish (published; analyzing failed)", err)
		}
	}
	sortChanges(res.Added)
	sortChanges(res.Changed)
	return res, nil
}

func nsName(ns string) string {
	if ns == "" {
		return "the root namespace"
	}
	return "namespace " + strconv.Quote(ns)
}

// createNamespace records ns, refusing one that overlaps another.
func createNamespace(ctx context.Context, tx pgx.Tx, ns, who string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7365328)`); err != nil {
		return err
	}
	var other string
	err := tx.QueryRow(ctx, `SELECT prefix FROM namespaces WHERE prefix = $1 OR $1 = '' OR prefix = ''
		OR starts_with(prefix, $1 || '/') OR starts_with($1, prefix || '/') LIMIT 1`, ns).Scan(&other)
	switch {
	case err == nil && other == ns:
		return fmt.Errorf("registry: %s was created by someone else while this publish ran: %w; nothing was published, run publish again", nsName(ns), ErrConflict)
	case err == nil:
		return fmt.Errorf("registry: %s overlaps %s, which another publish owns: %w; publish under a prefix of its own (--prefix)", nsName(ns), nsName(other), ErrOverlap)
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO namespaces (prefix, created_by) VALUES ($1, $2)`, ns, who)
	return err
}

// bump increments the generation and notifies replicas on commit.
func bump(ctx context.Context, tx pgx.Tx) (int64, error) {
	var gen int64
	if err := tx.QueryRow(ctx, `UPDATE registry_state SET generation = generation + 1, changed_at = clock_timestamp() RETURNING generation`).Scan(&gen); err != nil {
		return 0, err
	}
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, strconv.FormatInt(gen, 10))
	return gen, err
}

// invalid refuses a catalog that left skills out: publishing it would
// remove them from the registry.
func invalid(cat *catalog.Catalog) error {
	var msgs []string
	for _, d := range cat.Diagnostics() {
		if d.Severity == skill.Error {
			msgs = append(msgs, fmt.Sprintf("%s: %s", d.Path, d.Message))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	if len(msgs) > 10 {
		msgs = append(msgs[:10], fmt.Sprintf("and %d more", len(msgs)-10))
	}
	return fmt.Errorf("registry: %w (fix them, or move them out of the tree; nothing was published):\n  %s", ErrInvalid, strings.Join(msgs, "\n  "))
}

type readResult struct {
	f    *catalog.File
	data []byte
	err  error
}

// readAhead reads files on a few goroutines while COPY sends earlier ones:
// reading and checking content against its digest costs as much as the
// sending. At most 2×workers files (each within the per-skill size limit)
// are held at once. stop ends the readers early.
func readAhead(cat *catalog.Catalog, files []*catalog.File) (<-chan readResult, func()) {
	workers := min(runtime.GOMAXPROCS(0), 4)
	out := make(chan readResult, workers)
	done := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					return
				}
				data, err := cat.ReadFile(files[i])
				select {
				case out <- readResult{files[i], data, err}:
				case <-done:
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(out) }()
	var once sync.Once
	return out, func() { once.Do(func() { close(done) }) }
}

// storeBlobs copies content straight into blobs. When another publish (of
// any namespace) stored some of the same content since this one checked,
// the copy fails on the digest key; it is then done again through a
// temporary table, skipping what is already there.
func storeBlobs(ctx context.Context, tx pgx.Tx, cat *catalog.Catalog, files []*catalog.File) error {
	if _, err := tx.Exec(ctx, `SAVEPOINT blobs`); err != nil {
		return err
	}
	err := copyBlobs(ctx, tx, "blobs", cat, files)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		return err
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT blobs`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE new_blobs (digest text, size bigint, data bytea) ON COMMIT DROP`); err != nil {
		return err
	}
	if err := copyBlobs(ctx, tx, "new_blobs", cat, files); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO blobs SELECT * FROM new_blobs ON CONFLICT (digest) DO NOTHING`)
	return err
}

func copyBlobs(ctx context.Context, tx pgx.Tx, table string, cat *catalog.Catalog, files []*catalog.File) error {
	rows, stop := readAhead(cat, files)
	defer stop()
	src := pgx.CopyFromFunc(func() ([]any, error) {
		r, ok := <-rows
		if !ok {
			return nil, nil
		}
		if r.err != nil {
			return nil, fmt.Errorf("registry: reading %s: %w; nothing was published", r.f.Path, r.err)
		}
		return []any{r.f.Digest, r.f.Size, r.data}, nil
	})
	_, err := tx.CopyFrom(ctx, pgx.Identifier{table}, []string{"digest", "size", "data"}, src)
	return err
}
