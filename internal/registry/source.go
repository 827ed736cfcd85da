package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
)

// DefaultCacheBytes bounds the content a replica holds in memory.
const DefaultCacheBytes = 64 << 20

// DefaultQueryTimeout bounds each of a replica's trips to the database (a
// content read, a reload): a database that stops answering (a hung host,
// a full disk, a network partition without resets) fails a read with an
// error after it, instead of holding the request until the client gives
// up.
const DefaultQueryTimeout = 10 * time.Second

// ReadyTimeout bounds the ping of [Source.Ready], so that /readyz notices
// a database that stopped answering within a probe's usual timeout.
const ReadyTimeout = 2 * time.Second

// Options configure a replica [Source]. The zero value is usable.
type Options struct {
	// CacheBytes bounds the file content held in memory (default 64 MiB);
	// content beyond it is read from the database by digest when served.
	CacheBytes int64
	// MaxConns bounds the replica's connections for content reads (default
	// 4), besides the one that listens for changes.
	MaxConns int32
	// QueryTimeout bounds each trip to the database: a content read, a
	// reload (default DefaultQueryTimeout).
	QueryTimeout time.Duration
	// Logger receives reconnections and reloads; nil means slog.Default().
	Logger *slog.Logger
	// Tracer, when set, sees every query of the replica's pooled
	// connections (tests count a page's queries with it).
	Tracer pgx.QueryTracer
}

// Source is a replica: a [published.Source] serving the registry's current
// versions. It keeps metadata in memory and swaps its snapshot atomically
// on every change announced through LISTEN/NOTIFY; when the database is
// gone it keeps serving its last snapshot, reports not ready, and reloads
// on reconnect (a notification sent while disconnected is lost).
type Source struct {
	dsn     string
	pool    *pgxpool.Pool
	timeout time.Duration // Options.QueryTimeout
	log     *slog.Logger
	cache   *cache
	group   singleflight.Group

	cur    atomic.Pointer[snapshot]
	reload sync.Mutex

	feed published.ChangeFeed

	mu      sync.Mutex
	downErr error     // why the database is unreachable; nil when listening
	downAt  time.Time // since when

	cancel context.CancelFunc
	done   chan struct{}

	hits, misses prometheus.Counter
	propagation  prometheus.Histogram
	reloads      *prometheus.CounterVec
}

// Open connects to the registry at dsn, loads its current versions and
// starts listening for changes. It fails when the database cannot be
// reached or holds no registry: a replica needs one snapshot to start.
// Close stops it.
func Open(ctx context.Context, dsn string, opts *Options) (*Source, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 4
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = DefaultQueryTimeout
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("registry: %s: %w", redact(dsn), err)
	}
	cfg.MaxConns = o.MaxConns
	if o.Tracer != nil {
		cfg.ConnConfig.Tracer = o.Tracer
	}
	if cfg.ConnConfig.ConnectTimeout <= 0 || cfg.ConnConfig.ConnectTimeout > o.QueryTimeout {
		cfg.ConnConfig.ConnectTimeout = o.QueryTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("registry: %s: %w", redact(dsn), err)
	}
	s := &Source{dsn: dsn, pool: pool, timeout: o.QueryTimeout, log: o.Logger, cache: newCache(o.CacheBytes),
		done:        make(chan struct{}),
		hits:        prometheus.NewCounter(prometheus.CounterOpts{Name: "skillport_registry_cache_hits_total", Help: "File reads answered from the replica's content cache."}),
		misses:      prometheus.NewCounter(prometheus.CounterOpts{Name: "skillport_registry_cache_misses_total", Help: "File reads that went to the database."}),
		propagation: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "skillport_registry_propagation_seconds", Help: "Time from a change's commit to this replica serving it.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		reloads:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skillport_registry_reloads_total", Help: "Snapshot reloads by result."}, []string{"result"}),
	}
	snap, err := s.load(ctx, nil)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.cur.Store(snap)
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	go s.listen(lctx)
	return s, nil
}

// Close stops listening and closes the connections.
func (s *Source) Close() error {
	s.cancel()
	<-s.done
	s.pool.Close()
	return nil
}

// Collectors returns the replica's metrics (cache hits and misses,
// propagation of changes, reloads), to register with the endpoint's
// Prometheus registry.
func (s *Source) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.hits, s.misses, s.propagation, s.reloads,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skillport_registry_generation", Help: "Registry generation this replica serves."},
			func() float64 { return float64(s.cur.Load().gen) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skillport_registry_cache_bytes", Help: "Content bytes held in the replica's cache."},
			func() float64 { _, b := s.cache.size(); return float64(b) }),
	}
}

// Snapshot implements [published.Source].
func (s *Source) Snapshot() published.Snapshot { return s.cur.Load() }

// Generation returns the registry generation being served.
func (s *Source) Generation() int64 { return s.cur.Load().gen }

// Refresh implements [published.Source]: it reloads from the database unless
// the snapshot was already replaced.
func (s *Source) Refresh(ctx context.Context, stale published.Snapshot) (published.Snapshot, error) {
	if cur := s.cur.Load(); published.Snapshot(cur) != stale {
		return cur, nil
	}
	if err := s.Reload(ctx); err != nil {
		return nil, err
	}
	return s.cur.Load(), nil
}

// ListSkills implements [published.Source].
func (s *Source) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	return published.ListSkills(ctx, s)
}

// ReadFile implements [published.Source].
func (s *Source) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	return published.ReadFile(ctx, s, f)
}

// OnChange implements [published.Source].
func (s *Source) OnChange(fn func(old, new published.Snapshot)) (cancel func()) {
	return s.feed.OnChange(fn)
}

// Ready reports whether the replica is listening to the database and the
// database answers a ping within [ReadyTimeout]. The error says only that
// (and since when the last snapshot is served): /readyz is often public,
// and the database's user, name and address are not its business. The
// cause is logged.
func (s *Source) Ready(ctx context.Context) error {
	s.mu.Lock()
	downErr, downAt := s.downErr, s.downAt
	s.mu.Unlock()
	gen := s.cur.Load().gen
	if downErr != nil {
		return fmt.Errorf("registry database unreachable since %s; serving the last snapshot, generation %d", downAt.UTC().Format(time.RFC3339), gen)
	}
	pctx, cancel := context.WithTimeout(ctx, min(ReadyTimeout, s.timeout))
	defer cancel()
	if err := s.pool.Ping(pctx); err != nil {
		s.log.Warn("registry database did not answer the readiness ping", "err", err)
		return fmt.Errorf("registry database not answering; serving the last snapshot, generation %d", gen)
	}
	return nil
}

func (s *Source) setDown(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.downErr = nil
		return
	}
	if s.downErr == nil {
		s.downAt = time.Now()
		s.log.Warn("registry unreachable; serving the last snapshot", "err", err)
	}
	s.downErr = err
}

// Reload reads the current versions and swaps the snapshot if the
// registry's generation moved.
func (s *Source) Reload(ctx context.Context) error {
	s.reload.Lock()
	defer s.reload.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var gen int64
	if err := s.pool.QueryRow(ctx, `SELECT generation FROM registry_state`).Scan(&gen); err != nil {
		s.reloads.WithLabelValues("error").Inc()
		return dbError("reload", err)
	}
	old := s.cur.Load()
	if gen == old.gen {
		return nil
	}
	snap, err := s.load(ctx, old)
	if err != nil {
		s.reloads.WithLabelValues("error").Inc()
		return err
	}
	s.reloads.WithLabelValues("ok").Inc()
	s.cur.Store(snap)
	s.propagation.Observe(time.Since(snap.at).Seconds())
	if snap.ID() != old.ID() {
		s.feed.Notify(old, snap)
	}
	return nil
}

// load reads, in one read-only transaction, the current versions of the
// skills changed since base's generation (all of them when base is nil).
func (s *Source) load(ctx context.Context, base *snapshot) (*snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var snap *snapshot
	since := int64(-1)
	if base != nil {
		since = base.gen
	}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var gen int64
		var at time.Time
		// A replica may run a newer binary than the schema (before the next
		// publish or migrate): review states exist from migration 4 on.
		// scan findings from 5 and signatures from 6 on.
		var reviews, scanned, signatures bool
		if err := tx.QueryRow(ctx, `SELECT generation, changed_at, EXISTS (SELECT 1 FROM skillport_migrations WHERE version >= 4),
			EXISTS (SELECT 1 FROM skillport_migrations WHERE version >= 5), EXISTS (SELECT 1 FROM skillport_migrations WHERE version >= 6)
			FROM registry_state`).Scan(&gen, &at, &reviews, &scanned, &signatures); err != nil {
			return fmt.Errorf("no registry here (run skillport registry migrate, or publish): %w", err)
		}
		signature := "NULL::text"
		if signatures {
			signature = "v.signature"
		}
		review := "''"
		if reviews {
			review = "coalesce(v.review, '')"
		}
		// The served versions' scan findings travel with them
		// (docs/registry-scanning.md); a schema older than scanning has none.
		findings := `NULL::text`
		if scanned {
			findings = `(SELECT json_agg(json_build_object('scanner', f.scanner, 'ruleId', f.rule_id, 'level', f.level, 'file', f.file, 'line', f.line, 'message', f.message)
				ORDER BY f.file, f.line, f.rule_id)::text FROM findings f WHERE f.path = s.path AND f.version = s.current)`
		}
		rows, err := tx.Query(ctx, `SELECT s.path, v.manifest::text, `+signature+`, `+findings+`, `+review+` FROM skills s
			LEFT JOIN versions v ON v.path = s.path AND v.version = s.current
			WHERE s.generation > $1 AND (s.current IS NOT NULL OR $1 >= 0)`, since)
		if err != nil {
			return err
		}
		var rs []row
		for rows.Next() {
			var r row
			var fs []byte
			// Into bytes, as they are kept: a string first would copy
			// every manifest once more (NULL leaves nil).
			if err := rows.Scan(&r.path, &r.manifest, &r.signature, &fs, &r.review); err != nil {
				return err
			}
			if fs != nil {
				// json_build_object spaces its output; entries are compact.
				var buf bytes.Buffer
				if err := json.Compact(&buf, fs); err != nil {
					return fmt.Errorf("the scan findings of %s: %w", r.path, err)
				}
				r.findings = buf.Bytes()
			}
			rs = append(rs, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		snap, err = buildSnapshot(s, gen, at, base, rs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("registry: loading %s: %w", redact(s.dsn), err)
	}
	return snap, nil
}

// listen keeps a connection listening for changes, reloading on each one
// and on every reconnect.
func (s *Source) listen(ctx context.Context) {
	defer close(s.done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		s.setDown(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (s *Source) listenOnce(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, err := pgx.Connect(cctx, s.dsn)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	// Catch up on what was missed while disconnected.
	if err := s.Reload(ctx); err != nil {
		return err
	}
	s.setDown(nil)
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		if err := s.Reload(ctx); err != nil {
			s.log.Warn("registry reload failed", "err", err)
		}
	}
}

// content returns a file's bytes by digest, from the cache or the
// database, after checking them against the digest.
func (s *Source) content(ctx context.Context, f *catalog.File) ([]byte, error) {
	if b, ok := s.cache.get(f.Digest); ok {
		s.hits.Inc()
		return b, nil
	}
	s.misses.Inc()
	v, err, _ := s.group.Do(f.Digest, func() (any, error) {
		var data []byte
		// The read is shared by every request for the digest: its deadline
		// is the replica's, not the first requester's cancellation.
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		defer cancel()
		if err := s.pool.QueryRow(qctx, `SELECT data FROM blobs WHERE digest = $1`, f.Digest).Scan(&data); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil, fmt.Errorf("registry: %s: content %s is missing from the registry", f.URI, f.Digest)
			}
			if qctx.Err() != nil || pgconn.Timeout(err) {
				return nil, fmt.Errorf("registry: reading %s: the database did not answer within %s; check that it is up (the deadline is the replica's query timeout)", f.URI, s.timeout)
			}
			return nil, fmt.Errorf("registry: reading %s: %w", f.URI, err)
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != f.Size || "sha256:"+hex.EncodeToString(sum[:]) != f.Digest {
			return nil, fmt.Errorf("registry: %s: stored content does not match its digest %s", f.URI, f.Digest)
		}
		s.cache.add(f.Digest, data)
		return data, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}
