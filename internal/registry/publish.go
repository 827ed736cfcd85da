package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/semaphore"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/scan"
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
	// Scan configures the scanners run on each new version (nil: none);
	// the namespace's scan policy decides whether a finding blocks the
	// publish (docs/registry-scanning.md).
	Scan *ScanOptions
	// From is where the publish came from (a client's address), recorded
	// in the audit log; empty means the database client's address.
	From string
	// Allow, when set, decides whether the publisher holds a role on a
	// namespace: a publish needs [RolePublish] on every namespace it
	// writes, else it is refused ([ErrForbidden]) before anything is
	// written. Nil allows everything (an operator with the database's
	// credentials).
	Allow func(role, ns string) bool

	beforeCommit func(tx pgx.Tx) // test hook: runs just before COMMIT
}

// Change is one skill added, changed or removed by a publish.
type Change struct {
	Path    string
	Version int // the new version; for a removal, the version that was current
	Files   int
	Size    int64
	// Findings are the scanners' findings on the new version.
	Findings []scan.Finding
}

// PublishResult says what a publish changed.
type PublishResult struct {
	Namespace               string
	Added, Changed, Removed []Change
	Unchanged               int
	// BlobsStored and BytesStored count the content that was new to the
	// registry; the rest was already stored by digest. Content that two
	// namespaces of one publish share counts for the first.
	BlobsStored int
	BytesStored int64
	// Generation is the registry's generation after the publish (unchanged
	// when nothing changed).
	Generation int64
	// Timing is where the publish spent its time (the same for every
	// namespace of one publish).
	Timing PublishTiming
	// Review is the namespace's review mode ([ReviewOff], [ReviewObserve],
	// [ReviewEnforce]): unless off, the new versions are pending review,
	// and where enforced they are not served until approved.
	Review string
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
	var m manifest
	m.fill(s)
	return m
}

// fill makes m the manifest of s, reusing m's slice of files.
func (m *manifest) fill(s *catalog.Skill) {
	m.Frontmatter = s.Frontmatter.JSON()
	m.Files = m.Files[:0]
	for _, f := range s.Files {
		m.Files = append(m.Files, manifestFile{Rel: relURI(s, f), Name: f.Name, Digest: f.Digest, Size: f.Size, MIME: f.MIMEType, Text: f.Text})
	}
}

// signatureOf is the bundle stored with a new version of s: the one the
// catalog read from the source, or publish --sign-key made; nil (SQL
// NULL) when s is unsigned.
func signatureOf(s *catalog.Skill) *string {
	if len(s.Signature) == 0 {
		return nil
	}
	b := string(s.Signature)
	return &b
}

// relURI is f's URI below the root of s, as strings.TrimPrefix(f.URI,
// s.Root+"/") would give it without building the prefix for every file.
func relURI(s *catalog.Skill, f *catalog.File) string {
	if len(f.URI) > len(s.Root) && f.URI[len(s.Root)] == '/' && strings.HasPrefix(f.URI, s.Root) {
		return f.URI[len(s.Root)+1:]
	}
	return f.URI
}

// digest identifies a version's content: frontmatter and files.
func (m manifest) digest() string {
	h := newDigester()
	h.frontmatter(m.Frontmatter)
	for _, f := range m.Files {
		h.file(f.Rel, f.Digest, f.Size)
	}
	return h.sum()
}

// skillDigest is manifestOf(s).digest() without building the manifest: a
// publish computes it for every skill, and builds manifests only of those
// that changed.
func skillDigest(s *catalog.Skill, h *digester) string {
	h.reset()
	h.frontmatter(s.Frontmatter.JSON())
	for _, f := range s.Files {
		h.file(relURI(s, f), f.Digest, f.Size)
	}
	return h.sum()
}

type digester struct {
	h   hash.Hash
	buf []byte
}

func newDigester() *digester { return &digester{h: sha256.New(), buf: make([]byte, 0, 256)} }

func (d *digester) reset()                { d.h.Reset() }
func (d *digester) frontmatter(fm []byte) { d.h.Write(fm) }

func (d *digester) file(rel, digest string, size int64) {
	d.buf = append(d.buf[:0], '\n')
	d.buf = append(d.buf, rel...)
	d.buf = append(d.buf, 0)
	d.buf = append(d.buf, digest...)
	d.buf = append(d.buf, 0)
	d.buf = strconv.AppendInt(d.buf, size, 10)
	d.h.Write(d.buf)
}

func (d *digester) sum() string {
	var out [sha256.Size]byte
	return "sha256:" + hex.EncodeToString(d.h.Sum(out[:0]))
}

// Part is one source of a publish of several sources ([PublishParts]).
type Part struct {
	// Name says where the part came from (a directory, a git source), so
	// that an error about two parts can name both.
	Name string
	// Catalog holds the part's skills; its prefix (Options().Prefix) is
	// the namespace it publishes. Parts with the same prefix publish that
	// namespace together.
	Catalog *catalog.Catalog
	// Commit is recorded with the part's new versions; empty means
	// [PublishOptions.Commit].
	Commit string
}

// PublishTiming says where a publish spent its time, so that a slow
// publish can be told apart: reading the registry's state and comparing
// (Plan), reading and storing new content (Content), writing versions,
// skills and events (Metadata), committing and, after a large publish,
// refreshing the planner's statistics (Commit).
type PublishTiming struct {
	Plan, Content, Metadata, Commit time.Duration
}

type currentSkill struct {
	current int // 0 when removed
	digest  string
	seen    bool // in the published tree
}

// fileRef is a file to store, the catalog that reads it, and the result
// of the namespace that brings it (and counts it as stored).
type fileRef struct {
	cat *catalog.Catalog
	f   *catalog.File
	res *PublishResult
}

// nsPlan is what a publish does to one namespace.
type nsPlan struct {
	ns       string
	parts    []string // names of the parts publishing it
	revision int64    // -1 when the namespace is new
	cur      map[string]*currentSkill
	news     []newVersion
	res      *PublishResult
	// pending holds path+"\x00"+digest of the namespace's versions
	// pending review: publishing their content again adds no version.
	pending map[string]bool
}

// state is the review state of the plan's new versions.
func (p *nsPlan) state() string {
	if p.res.Review == ReviewOff || p.res.Review == "" {
		return StatePublished
	}
	return StatePending
}

// held reports whether the plan's new versions wait for approval before
// they are served.
func (p *nsPlan) held() bool { return p.res.Review == ReviewEnforce }

type newVersion struct {
	s       *catalog.Skill
	cat     *catalog.Catalog
	commit  string
	digest  string
	version int
	changed bool
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
	res, err := PublishParts(ctx, conn, []Part{{Name: cat.SourceDir(), Catalog: cat}}, opts)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// PublishParts publishes several catalogs in one transaction, as [Publish]
// does one: all of them or nothing. Parts with the same prefix publish one
// namespace together; a skill path in two of them ([ErrCollision]), or two
// prefixes of which one contains the other ([ErrOverlap]), is refused
// naming both parts, before the registry is touched. It returns one result
// per namespace, in the order the parts first name them.
func PublishParts(ctx context.Context, conn *pgx.Conn, parts []Part, opts *PublishOptions) ([]*PublishResult, error) {
	res, err := publishParts(ctx, conn, parts, opts)
	if err != nil && refusal(err) {
		// A refused publish is recorded, once per namespace it named.
		a := Actor{}
		if opts != nil {
			a.Who, a.From = opts.Publisher, opts.From
		}
		seen := map[string]bool{}
		for _, pt := range parts {
			if pt.Catalog == nil || seen[pt.Catalog.Options().Prefix] {
				continue
			}
			ns := pt.Catalog.Options().Prefix
			seen[ns] = true
			if _, merr := Migrate(ctx, conn); merr != nil {
				break
			}
			err = refused(ctx, conn, a, "publish", ns, "", 0, err)
		}
	}
	return res, err
}

func publishParts(ctx context.Context, conn *pgx.Conn, parts []Part, opts *PublishOptions) ([]*PublishResult, error) {
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
	if len(parts) == 0 {
		return nil, errors.New("registry: nothing to publish: name at least one source")
	}
	t0 := time.Now()
	plans, byNS, err := planParts(parts, o.Commit)
	if err != nil {
		return nil, err
	}
	// The skills' digests are computed while the database answers.
	hashed := hashSkills(plans)
	defer hashed.Wait()
	if _, err := Migrate(ctx, conn); err != nil {
		return nil, err
	}
	nss := make([]string, len(plans))
	for i, p := range plans {
		nss[i] = p.ns
		if o.Allow != nil && !o.Allow(RolePublish, p.ns) && !o.Allow(RoleAdmin, p.ns) {
			return nil, &ForbiddenError{Who: o.Publisher, Role: RolePublish, Namespace: p.ns, Action: "publishing"}
		}
	}

	// The namespaces as they are now, in one round trip; the commit fails
	// if one moved since.
	batch := &pgx.Batch{}
	batch.Queue(`SELECT prefix, revision FROM namespaces WHERE prefix = ANY($1)`, nss).Query(func(rows pgx.Rows) error {
		var ns string
		var rev int64
		_, err := pgx.ForEachRow(rows, []any{&ns, &rev}, func() error { plans[byNS[ns]].revision = rev; return nil })
		return err
	})
	var policies []Policy
	if o.Scan != nil {
		queuePolicies(batch, &policies)
	}
	batch.Queue(`SELECT namespace, path, coalesce(current, 0), digest FROM skills WHERE namespace = ANY($1)`, nss).Query(func(rows pgx.Rows) error {
		var ns, path string
		var c currentSkill
		_, err := pgx.ForEachRow(rows, []any{&ns, &path, &c.current, &c.digest}, func() error {
			cc := c
			plans[byNS[ns]].cur[path] = &cc
			return nil
		})
		return err
	})
	batch.Queue(`SELECT ns, skillport_review_mode(ns) FROM unnest($1::text[]) AS t(ns)`, nss).Query(func(rows pgx.Rows) error {
		var ns, mode string
		_, err := pgx.ForEachRow(rows, []any{&ns, &mode}, func() error { plans[byNS[ns]].res.Review = mode; return nil })
		return err
	})
	batch.Queue(`SELECT namespace, path, digest FROM versions WHERE namespace = ANY($1) AND review = 'pending' AND yanked_at IS NULL`, nss).Query(func(rows pgx.Rows) error {
		var ns, path, digest string
		_, err := pgx.ForEachRow(rows, []any{&ns, &path, &digest}, func() error {
			p := plans[byNS[ns]]
			if p.pending == nil {
				p.pending = map[string]bool{}
			}
			p.pending[path+"\x00"+digest] = true
			return nil
		})
		return err
	})
	if err := conn.SendBatch(ctx, batch).Close(); err != nil {
		return nil, dbError("publish", err)
	}

	hashed.Wait()
	files := 0
	for _, p := range plans {
		for _, n := range p.news {
			files += len(n.s.Files)
		}
	}
	digests := make(map[string]fileRef, files)
	var again []string // changed or re-added skills: their next version number is needed
	changes := false
	for _, p := range plans {
		if err := p.compare(digests, &again); err != nil {
			return nil, err
		}
		changes = changes || len(p.news) > 0 || len(p.res.Removed) > 0 || p.revision < 0
	}
	results := make([]*PublishResult, len(plans))
	for i, p := range plans {
		results[i] = p.res
	}
	if !changes {
		var gen int64
		err := conn.QueryRow(ctx, `SELECT generation FROM registry_state`).Scan(&gen)
		for _, r := range results {
			r.Generation = gen
			r.Timing.Plan = time.Since(t0)
		}
		return results, dbError("publish", err)
	}

	// Version numbers of skills seen before, and the content the registry
	// does not hold yet, in one round trip.
	next := map[string]int{}
	want := make([]string, 0, len(digests))
	for d := range digests {
		want = append(want, d)
	}
	have := map[string]bool{}
	batch = &pgx.Batch{}
	if len(again) > 0 {
		batch.Queue(`SELECT path, max(version) FROM versions WHERE path = ANY($1) GROUP BY path`, again).Query(func(rows pgx.Rows) error {
			var path string
			var v int
			_, err := pgx.ForEachRow(rows, []any{&path, &v}, func() error { next[path] = v; return nil })
			return err
		})
	}
	// The digests travel as one string, split by the server: a text[]
	// parameter of tens of thousands of elements cost the publisher more
	// to encode than the query.
	batch.Queue(`SELECT digest FROM blobs WHERE digest = ANY(string_to_array($1, ' '))`, strings.Join(want, " ")).Query(func(rows pgx.Rows) error {
		var d string
		_, err := pgx.ForEachRow(rows, []any{&d}, func() error { have[d] = true; return nil })
		return err
	})
	if err := conn.SendBatch(ctx, batch).Close(); err != nil {
		return nil, dbError("publish", err)
	}
	var missing []fileRef
	var bytes int64
	for _, d := range want {
		if r := digests[d]; !have[d] {
			missing = append(missing, r)
			bytes += r.f.Size
			r.res.BlobsStored++
			r.res.BytesStored += r.f.Size
		}
	}
	if bytes > o.MaxBytes {
		what := nsName(plans[0].ns)
		if len(plans) > 1 {
			what = fmt.Sprintf("%d namespaces", len(plans))
		}
		return nil, fmt.Errorf("registry: publishing %s would store %d bytes of new content, over the limit of %d: %w; publish smaller trees or raise the limit", what, bytes, o.MaxBytes, ErrTooLarge)
	}
	for _, p := range plans {
		for i := range p.news {
			n := &p.news[i]
			n.version = next[n.s.Path] + 1
		}
		p.record()
	}
	news := 0
	for _, p := range plans {
		news += len(p.news)
	}
	// The new versions are scanned while the publish goes on: new content
	// as it is read for storing, the rest on scanning goroutines. The
	// transaction waits for the scans before it writes the metadata.
	scans := startScans(ctx, plans, o.Scan, policies, missing)
	defer scans.stop()
	var rd *aheadReader
	defer func() {
		if rd != nil {
			rd.stop()
		}
	}()
	var timing PublishTiming
	timing.Plan = time.Since(t0)

	var gen int64
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, p := range plans {
			if p.revision < 0 {
				if err := createNamespace(ctx, tx, p.ns, o.Publisher); err != nil {
					return err
				}
				p.revision = 0
			}
		}
		// Every namespace moves to its next revision first: a publisher
		// that lost a race learns it before sending content.
		nb := &pgx.Batch{}
		for _, p := range plans {
			nb.Queue(`UPDATE namespaces SET revision = revision + 1 WHERE prefix = $1 AND revision = $2`, p.ns, p.revision).Exec(func(tag pgconn.CommandTag) error {
				if tag.RowsAffected() != 1 {
					return fmt.Errorf("registry: %s was published by someone else while this publish ran: %w; nothing was published, run publish again", nsName(p.ns), ErrConflict)
				}
				return nil
			})
		}
		if err := tx.SendBatch(ctx, nb).Close(); err != nil {
			return err
		}
		t := time.Now()
		// Many new versions and their events are copied first, before the
		// generation row is locked: the server works on them while the
		// content is read ahead.
		rd = readAheadFunc(missing, aheadBytes, scans.onRead())
		bulk := news > smallFiles
		if bulk {
			if err := copyVersions(ctx, tx, plans, o); err != nil {
				return err
			}
		}
		tc := time.Now()
		mb := &pgx.Batch{}
		if bytes <= smallContent && len(missing) <= smallFiles {
			// Little new content travels with the metadata, in one round trip.
			if err := queueBlobs(mb, rd); err != nil {
				return err
			}
		} else if err := storeBlobs(ctx, tx, rd, missing); err != nil {
			return err
		}
		timing.Content = time.Since(tc)
		// The generation row is locked from the bump to COMMIT: the heavy
		// work (content, many versions) is done before it.
		mb.Queue(`UPDATE registry_state SET generation = generation + 1, changed_at = clock_timestamp() RETURNING generation`).QueryRow(func(row pgx.Row) error {
			return row.Scan(&gen)
		})
		mb.Queue(`SELECT pg_notify($1, generation::text) FROM registry_state`, Channel)
		if err := scans.finish(ctx, tx, mb, plans); err != nil {
			return err
		}
		if err := queueVersions(mb, plans, o, bulk); err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, mb).Close(); err != nil {
			return err
		}
		if bulk {
			if err := copySkills(ctx, tx, plans, gen); err != nil {
				return err
			}
		}
		if o.beforeCommit != nil {
			o.beforeCommit(tx)
		}
		timing.Metadata = time.Since(t) - timing.Content
		return nil
	})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return nil, fmt.Errorf("registry: another publish stored a version of the same skill while this publish of %s ran: %w; nothing was published, run publish again", nsName(plans[0].ns), ErrConflict)
		}
		return nil, dbError("publish (nothing was published)", err)
	}
	if news >= 1000 {
		// Fresh statistics after a bulk publish keep the planner from
		// nested-looping over the namespace on the next one. Only the
		// columns that queries select or join on are analyzed: sampling
		// the manifests cost as much as the rest.
		if _, err := conn.Exec(ctx, `ANALYZE skills (path, namespace, current, generation), versions (path, version)`); err != nil {
			return nil, dbError("publish (published; analyzing failed)", err)
		}
	}
	timing.Commit = time.Since(t0) - timing.Plan - timing.Content - timing.Metadata
	for _, r := range results {
		r.Generation = gen
		r.Timing = timing
	}
	return results, nil
}

// planParts checks the parts against each other and groups them by
// namespace.
func planParts(parts []Part, commit string) ([]*nsPlan, map[string]int, error) {
	var plans []*nsPlan
	byNS := map[string]int{}
	from := map[string]string{} // skill path -> part name
	for _, pt := range parts {
		cat := pt.Catalog
		name := pt.Name
		if name == "" {
			name = "the catalog"
		}
		if cat == nil {
			return nil, nil, fmt.Errorf("registry: %s: no catalog to publish (Part.Catalog is nil)", name)
		}
		if err := invalid(cat); err != nil {
			if len(parts) > 1 {
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			return nil, nil, err
		}
		if cat.Options().Scheme != "" && cat.Options().Scheme != catalog.DefaultScheme {
			return nil, nil, fmt.Errorf("registry: %s: only %s:// skills can be published (the catalog uses %s://)", name, catalog.DefaultScheme, cat.Options().Scheme)
		}
		ns := cat.Options().Prefix
		i, ok := byNS[ns]
		if !ok {
			for _, q := range plans {
				if overlaps(ns, q.ns) {
					return nil, nil, fmt.Errorf("registry: %s (from %s) overlaps %s (from %s): %w; nothing was published, give the sources prefixes that do not contain each other", nsName(ns), name, nsName(q.ns), q.parts[0], ErrOverlap)
				}
			}
			i = len(plans)
			byNS[ns] = i
			plans = append(plans, &nsPlan{ns: ns, revision: -1, cur: map[string]*currentSkill{}, res: &PublishResult{Namespace: ns}})
		}
		p := plans[i]
		p.parts = append(p.parts, name)
		c := pt.Commit
		if c == "" {
			c = commit
		}
		p.news = slices.Grow(p.news, len(cat.Skills()))
		for _, s := range cat.Skills() {
			// A catalog's skill paths are distinct: only two parts can collide.
			if len(parts) > 1 {
				if other, dup := from[s.Path]; dup {
					return nil, nil, fmt.Errorf("registry: skill %s is in both %s and %s: %w; nothing was published, remove one or give the sources different prefixes", s.Path, other, name, ErrCollision)
				}
				from[s.Path] = name
			}
			p.news = append(p.news, newVersion{s: s, cat: cat, commit: c})
		}
	}
	return plans, byNS, nil
}

// overlaps reports whether namespaces a and b cannot both exist.
func overlaps(a, b string) bool {
	return a == "" || b == "" || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// compare keeps in p.news only the skills that are new or changed, finds
// the removed ones, and collects the files of the new versions.
func (p *nsPlan) compare(digests map[string]fileRef, again *[]string) error {
	all := p.news
	p.news = p.news[:0]
	for _, n := range all {
		c, ok := p.cur[n.s.Path]
		if ok {
			c.seen = true
		}
		if ok && c.current != 0 && c.digest == n.digest || p.pending[n.s.Path+"\x00"+n.digest] {
			p.res.Unchanged++
			continue
		}
		n.changed = ok && c.current != 0
		if ok {
			*again = append(*again, n.s.Path)
		}
		p.news = append(p.news, n)
		for _, f := range n.s.Files {
			if _, dup := digests[f.Digest]; !dup {
				digests[f.Digest] = fileRef{n.cat, f, p.res}
			}
		}
	}
	for path, c := range p.cur {
		if c.current != 0 && !c.seen {
			p.res.Removed = append(p.res.Removed, Change{Path: path, Version: c.current})
		}
	}
	sortChanges(p.res.Removed)
	return nil
}

// hashSkills sets the digest of every skill of plans on a few goroutines,
// done when the returned group is: for a re-publish of a large namespace
// with few changes, this is most of the work left on the publisher's side,
// and it runs while the database answers the first queries.
func hashSkills(plans []*nsPlan) *sync.WaitGroup {
	var all []*newVersion
	for _, p := range plans {
		for i := range p.news {
			all = append(all, &p.news[i])
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 4, max(1, len(all)/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := newDigester()
			for i := w * len(all) / workers; i < (w+1)*len(all)/workers; i++ {
				all[i].digest = skillDigest(all[i].s, h)
			}
		}()
	}
	return &wg
}

// record fills p.res with the new versions.
func (p *nsPlan) record() {
	for _, n := range p.news {
		ch := Change{Path: n.s.Path, Version: n.version, Files: len(n.s.Files), Size: n.s.Size}
		if n.changed {
			p.res.Changed = append(p.res.Changed, ch)
		} else {
			p.res.Added = append(p.res.Added, ch)
		}
	}
	sortChanges(p.res.Added)
	sortChanges(p.res.Changed)
}

// Content up to these bounds is sent as parameters of one statement with
// the metadata; more is streamed with COPY.
const (
	smallContent = 4 << 20
	smallFiles   = 1000
)

// queueVersions queues the new versions, the skills' current versions and
// the events of every namespace: one statement each for all of them, the
// generation read from the row the publish bumps earlier in b. In a bulk
// publish, the versions, events and new skills are copied instead
// ([copyVersions], [copySkills]) and only the updates are queued.
func queueVersions(b *pgx.Batch, plans []*nsPlan, o PublishOptions, bulk bool) error {
	var v struct {
		path, ns, digest, manifest, commit, review []string
		version, files                             []int32
		size                                       []int64
		signature                                  []*string
	}
	var fresh, seen struct {
		path, ns, digest []string
		version          []int32
	}
	var gone, goneNS []string
	var ev struct {
		action, path, detail, ns []string
		version                  []int32
	}
	for _, p := range plans {
		for _, n := range p.news {
			to := &fresh
			if _, known := p.cur[n.s.Path]; known {
				to = &seen
			} else if bulk {
				continue
			}
			switch {
			case !p.held():
				to.path, to.ns, to.digest, to.version = append(to.path, n.s.Path), append(to.ns, p.ns), append(to.digest, n.digest), append(to.version, int32(n.version))
			case to == &fresh:
				// Pending approval: the skill exists, serving nothing yet.
				to.path, to.ns, to.digest, to.version = append(to.path, n.s.Path), append(to.ns, p.ns), append(to.digest, ""), append(to.version, 0)
			}
			if bulk {
				continue
			}
			m, err := json.Marshal(manifestOf(n.s))
			if err != nil {
				return err
			}
			v.path, v.ns, v.digest, v.manifest, v.commit = append(v.path, n.s.Path), append(v.ns, p.ns), append(v.digest, n.digest), append(v.manifest, string(m)), append(v.commit, n.commit)
			v.version, v.files, v.size, v.review = append(v.version, int32(n.version)), append(v.files, int32(len(n.s.Files))), append(v.size, n.s.Size), append(v.review, p.state())
			v.signature = append(v.signature, signatureOf(n.s))
			ev.action, ev.path, ev.version, ev.detail, ev.ns = append(ev.action, "publish"), append(ev.path, n.s.Path), append(ev.version, int32(n.version)), append(ev.detail, p.publishDetail(n)), append(ev.ns, p.ns)
		}
		for _, c := range p.res.Removed {
			gone, goneNS = append(gone, c.Path), append(goneNS, p.ns)
			if !bulk {
				ev.action, ev.path, ev.version, ev.detail, ev.ns = append(ev.action, "remove"), append(ev.path, c.Path), append(ev.version, int32(c.Version)), append(ev.detail, removeDetail), append(ev.ns, p.ns)
			}
		}
	}
	if len(v.path) > 0 {
		b.Queue(`INSERT INTO versions (path, version, namespace, digest, size, files, manifest, published_by, source_commit, review, signature)
			SELECT p, v, n, d, s, f, m::json, $9, c, r, g FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::bigint[], $6::int[], $7::text[], $8::text[], $10::text[], $11::text[]) AS t(p, v, n, d, s, f, m, c, r, g)`,
			v.path, v.version, v.ns, v.digest, v.size, v.files, v.manifest, v.commit, o.Publisher, v.review, v.signature)
	}
	// New skills are inserted (a skill another publish created meanwhile
	// fails on its key); skills seen before are updated.
	if len(fresh.path) > 0 {
		b.Queue(`INSERT INTO skills (path, namespace, current, digest, generation)
			SELECT p, n, nullif(v, 0), d, (SELECT generation FROM registry_state) FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS t(p, n, v, d)`,
			fresh.path, fresh.ns, fresh.version, fresh.digest)
	}
	if len(seen.path) > 0 {
		b.Queue(`UPDATE skills s SET current = t.v, digest = t.d, generation = (SELECT generation FROM registry_state), updated_at = now()
			FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS t(p, n, v, d) WHERE s.path = t.p AND s.namespace = t.n`,
			seen.path, seen.ns, seen.version, seen.digest)
	}
	if len(gone) > 0 {
		b.Queue(`UPDATE skills s SET current = NULL, digest = '', generation = (SELECT generation FROM registry_state), updated_at = now()
			FROM unnest($1::text[], $2::text[]) AS t(p, n) WHERE s.path = t.p AND s.namespace = t.n`, gone, goneNS)
	}
	if len(ev.path) > 0 {
		b.Queue(`INSERT INTO events (who, action, path, version, detail, namespace, origin)
			SELECT $5, a, p, v, d, n, `+originSQL(7)+` FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $6::text[]) AS t(a, p, v, d, n)`,
			ev.action, ev.path, ev.version, ev.detail, o.Publisher, ev.ns, o.From)
	}
	return nil
}

const removeDetail = "missing from the published tree"

func (p *nsPlan) publishDetail(n newVersion) string {
	d := "added "
	if n.changed {
		d = "changed "
	}
	if p.state() == StatePending {
		d = "pending review, " + d
	}
	return d + n.commit
}

// originSQL is the expression of an event's origin: parameter $n, else
// the database client's address.
func originSQL(n int) string {
	return fmt.Sprintf(`coalesce(nullif($%d, ''), 'db:' || coalesce(host(inet_client_addr()), 'local'))`, n)
}

// copyVersions copies the new versions and the events of every namespace:
// as statement parameters, thousands of them would cost the server more to
// decode than they save in round trips. Rows are built, and manifests
// encoded, as COPY sends them, while the server stores earlier ones.
func copyVersions(ctx context.Context, tx pgx.Tx, plans []*nsPlan, o PublishOptions) error {
	var row [11]any
	p, i := 0, -1
	// COPY has encoded a row before it asks for the next: the manifest's
	// buffer is reused.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	var m manifest
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"versions"},
		[]string{"path", "version", "namespace", "digest", "size", "files", "manifest", "published_by", "source_commit", "review", "signature"},
		pgx.CopyFromFunc(func() ([]any, error) {
			for i++; p < len(plans) && i >= len(plans[p].news); i = 0 {
				p++
			}
			if p == len(plans) {
				return nil, nil
			}
			n := &plans[p].news[i]
			buf.Reset()
			m.fill(n.s)
			if err := enc.Encode(m); err != nil {
				return nil, err
			}
			// Encode ends the value with a newline; json.Marshal would not.
			row = [11]any{n.s.Path, int32(n.version), plans[p].ns, n.digest, n.s.Size, int32(len(n.s.Files)), bytes.TrimSuffix(buf.Bytes(), []byte("\n")), o.Publisher, n.commit, plans[p].state(), signatureOf(n.s)}
			return row[:], nil
		}))
	if err != nil {
		return err
	}
	origin := o.From
	if origin == "" {
		if err := tx.QueryRow(ctx, `SELECT `+originSQL(1), "").Scan(&origin); err != nil {
			return err
		}
	}
	var ev [7]any
	p, i = 0, -1
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"events"}, []string{"who", "action", "path", "version", "detail", "namespace", "origin"},
		pgx.CopyFromFunc(func() ([]any, error) {
			for i++; p < len(plans) && i >= len(plans[p].news)+len(plans[p].res.Removed); i = 0 {
				p++
			}
			if p == len(plans) {
				return nil, nil
			}
			if pl := plans[p]; i < len(pl.news) {
				n := &pl.news[i]
				ev = [7]any{o.Publisher, "publish", n.s.Path, int32(n.version), pl.publishDetail(*n), pl.ns, origin}
			} else {
				c := pl.res.Removed[i-len(pl.news)]
				ev = [7]any{o.Publisher, "remove", c.Path, int32(c.Version), removeDetail, pl.ns, origin}
			}
			return ev[:], nil
		}))
	return err
}

// copySkills copies the skills a bulk publish adds, at generation gen
// (the skills it changes are updated by [queueVersions]).
func copySkills(ctx context.Context, tx pgx.Tx, plans []*nsPlan, gen int64) error {
	var row [5]any
	p, i := 0, -1
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"skills"}, []string{"path", "namespace", "current", "digest", "generation"},
		pgx.CopyFromFunc(func() ([]any, error) {
			for {
				for i++; p < len(plans) && i >= len(plans[p].news); i = 0 {
					p++
				}
				if p == len(plans) {
					return nil, nil
				}
				n := &plans[p].news[i]
				if _, known := plans[p].cur[n.s.Path]; !known {
					row = [5]any{n.s.Path, plans[p].ns, int32(n.version), n.digest, gen}
					if plans[p].held() {
						// Pending approval: the skill exists, serving nothing yet.
						row[2], row[3] = nil, ""
					}
					return row[:], nil
				}
			}
		}))
	return err
}

// queueBlobs reads the new content (a few MiB at most) and queues it;
// content another publish stored meanwhile is skipped.
func queueBlobs(b *pgx.Batch, rd *aheadReader) error {
	var digests []string
	var sizes []int64
	var data [][]byte
	for {
		r, ok := rd.next()
		if !ok {
			break
		}
		if r.err != nil {
			return fmt.Errorf("registry: reading %s: %w; nothing was published", r.f.Path, r.err)
		}
		digests, sizes, data = append(digests, r.f.Digest), append(sizes, r.f.Size), append(data, r.data)
	}
	if len(digests) == 0 {
		return nil
	}
	b.Queue(`INSERT INTO blobs (digest, size, data) SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[]) ON CONFLICT (digest) DO NOTHING`, digests, sizes, data)
	return nil
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

// CheckPublishable returns the error a publish of cat would refuse it
// with for its invalid skills ([ErrInvalid]), nil when it has none: a
// client publishing over HTTP checks before it uploads.
func CheckPublishable(cat *catalog.Catalog) error { return invalid(cat) }

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

// aheadBytes bounds the content read and not yet sent: a file larger than
// that is read alone.
const aheadBytes = 32 << 20

// aheadReader reads files on a few goroutines ahead of the COPY that sends
// them, starting before the transaction's metadata statements so that the
// reading (opening each file, checking it against its digest) runs while
// the server works on those: at most [aheadBytes] of content is held.
type aheadReader struct {
	out    chan readResult
	max    int64 // the budget's size
	budget *semaphore.Weighted
	held   int64 // bytes of the result handed out last, released by next
	cancel context.CancelFunc
	once   sync.Once
	wg     sync.WaitGroup
	onRead func(*catalog.File, []byte)
}

func readAhead(files []fileRef, budget int64) *aheadReader {
	return readAheadFunc(files, budget, nil)
}

// readAheadFunc is readAhead calling onRead (when not nil) with each file
// read, on the reading goroutine, before it is handed out: the scanners
// see the content the publish stores without reading it again.
func readAheadFunc(files []fileRef, budget int64, onRead func(*catalog.File, []byte)) *aheadReader {
	workers := min(runtime.GOMAXPROCS(0), 4)
	ctx, cancel := context.WithCancel(context.Background())
	r := &aheadReader{out: make(chan readResult, len(files)), max: budget, budget: semaphore.NewWeighted(budget), cancel: cancel, onRead: onRead}
	readers := map[*catalog.Catalog]*contentReader{}
	for _, f := range files {
		if readers[f.cat] == nil {
			readers[f.cat] = newContentReader(f.cat)
		}
	}
	var next atomic.Int64
	for range workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) || r.budget.Acquire(ctx, r.cost(files[i].f.Size)) != nil {
					return
				}
				data, err := readers[files[i].cat].read(files[i].f, getBuf(files[i].f.Size+1))
				if err == nil && onRead != nil {
					onRead(files[i].f, data)
				}
				r.out <- readResult{files[i].f, data, err}
			}
		}()
	}
	go func() {
		r.wg.Wait()
		for _, cr := range readers {
			cr.close()
		}
		close(r.out)
	}()
	return r
}

// sized returns buf with length n if it has the room, else a new slice.
func sized(buf []byte, n int64) []byte {
	if int64(cap(buf)) >= n {
		return buf[:n]
	}
	return make([]byte, n)
}

// bufs recycles the buffers of files up to 64 KiB once COPY has sent them,
// by size class (bufs[k] holds buffers of capacity 1<<k): storing
// thousands of files otherwise allocates their whole size again, and each
// collection that causes scans the catalog.
var bufs [17]sync.Pool

func getBuf(n int64) []byte {
	k := bits.Len64(uint64(n - 1))
	if k >= len(bufs) {
		return nil
	}
	if b, ok := bufs[k].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<k)
}

func putBuf(b []byte) {
	k := bits.Len64(uint64(cap(b))) - 1
	if k < 0 || k >= len(bufs) {
		return
	}
	b = b[:0]
	bufs[k].Put(&b)
}

// cost is what reading a file takes of the budget: a file larger than
// the whole budget is read alone.
func (r *aheadReader) cost(size int64) int64 { return min(max(size, 1), r.max) }

// next returns the next file read, in no particular order, and lets the
// readers go on past the one returned before (which the caller has sent).
func (r *aheadReader) next() (readResult, bool) {
	if r.held > 0 {
		r.budget.Release(r.held)
		r.held = 0
	}
	res, ok := <-r.out
	if ok {
		r.held = r.cost(res.f.Size)
	}
	return res, ok
}

// stop ends the readers early; it is safe to call more than once.
func (r *aheadReader) stop() { r.once.Do(r.cancel) }

// contentReader reads the files of a catalog for storing. For a catalog of
// a directory it opens each file once through its own [os.Root] (the
// catalog's ReadFile resolves the path twice, to stat before opening, which
// made reading the largest part of a publish); anything that does not read
// back exactly as published (size, digest) is read again through
// [catalog.Catalog.ReadFile], which is the authority and says what changed.
type contentReader struct {
	cat  *catalog.Catalog
	root *os.Root // nil: read through cat.ReadFile only
	fast *beneath // nil: read through root
}

func newContentReader(cat *catalog.Catalog) *contentReader {
	r := &contentReader{cat: cat}
	if dir := cat.SourceDir(); dir != "" {
		r.root, _ = os.OpenRoot(dir)
		if r.root != nil {
			r.fast = openBeneath(dir)
		}
	}
	return r
}

// read returns f's content, read into buf when it has room for f.Size+1
// bytes.
func (r *contentReader) read(f *catalog.File, buf []byte) ([]byte, error) {
	if r.root != nil {
		if data, ok := r.readDirect(f, buf); ok {
			return data, nil
		}
	}
	return r.cat.ReadFile(f)
}

// readDirect reads f if it is still a regular file of the published size
// and digest.
func (r *contentReader) readDirect(f *catalog.File, buf []byte) ([]byte, bool) {
	if r.fast != nil {
		if data, ok := r.fast.read(f.Path, f.Size, buf); ok && digestOf(data) == f.Digest {
			return data, true
		}
	}
	fh, err := r.root.OpenFile(f.Path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, false
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != f.Size {
		return nil, false
	}
	data := sized(buf, f.Size+1)
	n, err := io.ReadFull(fh, data)
	if n != int(f.Size) || (err != io.ErrUnexpectedEOF && err != io.EOF) {
		return nil, false
	}
	if digestOf(data[:n]) != f.Digest {
		return nil, false
	}
	return data[:n], true
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (r *contentReader) close() {
	if r.root != nil {
		r.root.Close()
	}
	if r.fast != nil {
		r.fast.close()
	}
}

// storeBlobs copies content straight into blobs. When another publish (of
// any namespace) stored some of the same content since this one checked,
// the copy fails on the digest key; it is then done again through a
// temporary table, skipping what is already there.
func storeBlobs(ctx context.Context, tx pgx.Tx, rd *aheadReader, files []fileRef) error {
	if _, err := tx.Exec(ctx, `SAVEPOINT blobs`); err != nil {
		return err
	}
	err := copyBlobs(ctx, tx, "blobs", rd)
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
	again := readAheadFunc(files, aheadBytes, rd.onRead)
	defer again.stop()
	if err := copyBlobs(ctx, tx, "new_blobs", again); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO blobs SELECT * FROM new_blobs ON CONFLICT (digest) DO NOTHING`)
	return err
}

func copyBlobs(ctx context.Context, tx pgx.Tx, table string, rd *aheadReader) error {
	var readErr error
	var sent []byte
	src := pgx.CopyFromFunc(func() ([]any, error) {
		// COPY has encoded the row before it asks for the next.
		putBuf(sent)
		r, ok := rd.next()
		sent = r.data
		if !ok {
			return nil, nil
		}
		if r.err != nil {
			readErr = fmt.Errorf("registry: reading %s: %w; nothing was published", r.f.Path, r.err)
			return nil, readErr
		}
		return []any{r.f.Digest, r.f.Size, r.data}, nil
	})
	_, err := tx.CopyFrom(ctx, pgx.Identifier{table}, []string{"digest", "size", "data"}, src)
	if readErr != nil {
		// The COPY failed because of the file: say so, keeping its error
		// (catalog.ErrChanged) for errors.Is.
		return readErr
	}
	return err
}
