package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// Defaults of [UsageOptions].
const (
	DefaultUsageFlush      = 30 * time.Second
	DefaultUsageMaxCallers = 1000
	DefaultUsageMaxEntries = 100_000
)

// OtherCaller is the caller a load is counted under once a replica has
// seen UsageOptions.MaxCallers distinct callers since its last flush.
const OtherCaller = "(other)"

// UsageOptions configure the counting of loads ([Usage]).
type UsageOptions struct {
	// FlushEvery is how often counts are added to the database (default
	// DefaultUsageFlush); what a replica counted since is lost if it dies
	// without a flush (a clean shutdown flushes).
	FlushEvery time.Duration
	// MaxCallers bounds the distinct callers held between flushes
	// (default DefaultUsageMaxCallers); loads of further callers are
	// counted under [OtherCaller].
	MaxCallers int
	// MaxEntries bounds the (skill, caller) pairs held between flushes
	// (default DefaultUsageMaxEntries); past it, loads are counted under
	// the skill and [OtherCaller].
	MaxEntries int
	// Logger receives failed flushes; nil means slog.Default().
	Logger *slog.Logger
}

// Execer is where usage is flushed: a *pgx.Conn or a *pgxpool.Pool.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

type usageKey struct{ path, caller string }

// Usage counts loads of skills per skill and caller in memory, bounded in
// cardinality, and adds them to the registry's usage table on every flush.
// It also keeps per-skill totals (never per caller) for /metrics.
type Usage struct {
	db   Execer
	opts UsageOptions

	mu      sync.Mutex
	pending map[usageKey]int64
	callers map[string]struct{}

	loads *prometheus.CounterVec
}

// NewUsage returns a counter flushing to db.
func NewUsage(db Execer, opts *UsageOptions) *Usage {
	var o UsageOptions
	if opts != nil {
		o = *opts
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = DefaultUsageFlush
	}
	if o.MaxCallers <= 0 {
		o.MaxCallers = DefaultUsageMaxCallers
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultUsageMaxEntries
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Usage{db: db, opts: o, pending: map[usageKey]int64{}, callers: map[string]struct{}{},
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skillport_skill_loads_total",
			Help: "Loads (skills/get, or resources/read of SKILL.md) of each skill served by this replica; callers are counted in the registry, never here."}, []string{"skill"})}
}

// Collector returns the per-skill load totals, for /metrics. Their
// cardinality is that of the skills served: only skills found in the
// snapshot are counted.
func (u *Usage) Collector() prometheus.Collector { return u.loads }

// Count counts n loads of the skill at path by caller ("" for anonymous).
func (u *Usage) Count(path, caller string, n int64) {
	u.loads.WithLabelValues(path).Add(float64(n))
	u.mu.Lock()
	defer u.mu.Unlock()
	u.add(usageKey{path, caller}, n)
}

// add counts under the caps; u.mu is held.
func (u *Usage) add(k usageKey, n int64) {
	if _, seen := u.callers[k.caller]; !seen {
		if len(u.callers) >= u.opts.MaxCallers {
			k.caller = OtherCaller
		} else {
			u.callers[k.caller] = struct{}{}
		}
	}
	if _, ok := u.pending[k]; !ok && len(u.pending) >= u.opts.MaxEntries {
		k.caller = OtherCaller
	}
	u.pending[k] += n
}

// Flush adds the counts held to the database and forgets them; on a
// failure they are kept (under the same caps) for the next flush.
func (u *Usage) Flush(ctx context.Context) error {
	u.mu.Lock()
	pending := u.pending
	u.pending, u.callers = map[usageKey]int64{}, map[string]struct{}{}
	u.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	paths := make([]string, 0, len(pending))
	callers := make([]string, 0, len(pending))
	loads := make([]int64, 0, len(pending))
	for k, n := range pending {
		paths, callers, loads = append(paths, k.path), append(callers, k.caller), append(loads, n)
	}
	_, err := u.db.Exec(ctx, `INSERT INTO usage (path, day, caller, loads)
		SELECT p, current_date, c, n FROM unnest($1::text[], $2::text[], $3::bigint[]) AS t(p, c, n)
		ON CONFLICT (path, day, caller) DO UPDATE SET loads = usage.loads + excluded.loads`, paths, callers, loads)
	if err != nil {
		u.mu.Lock()
		for k, n := range pending {
			u.add(k, n)
		}
		u.mu.Unlock()
		return dbError("usage flush", err)
	}
	return nil
}

// Run flushes every FlushEvery until ctx ends, then once more (within a
// few seconds) so that a clean shutdown loses nothing.
func (u *Usage) Run(ctx context.Context) {
	t := time.NewTicker(u.opts.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := u.Flush(fctx); err != nil {
				u.opts.Logger.Warn("usage counts lost at shutdown", "err", err)
			}
			return
		case <-t.C:
			if err := u.Flush(ctx); err != nil && ctx.Err() == nil {
				u.opts.Logger.Warn("usage flush failed; the counts are kept for the next one", "err", err)
			}
		}
	}
}

// Usage returns a counter of this replica's loads flushing to its
// database; run it with [Usage.Run].
func (s *Source) Usage(o *UsageOptions) *Usage { return NewUsage(s.pool, o) }

// usageBodyMax bounds the request bodies Handler reads for a load: a
// skills/get or resources/read is small, and a large body is something
// else.
const usageBodyMax = 64 << 10

// Handler counts, in front of an MCP HTTP handler, every request that
// loads a skill the caller is served: a skills/get by uri, or a
// resources/read of a skill's SKILL.md, answered with a result (not an
// error). The caller is the request's [skillserver.Caller] subject, ""
// for an anonymous one.
func (u *Usage) Handler(next http.Handler, src published.Source) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		b, ok := r.Body.(interface{ Buffered() []byte })
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		path := loadedSkill(r.Context(), b.Buffered(), src)
		if path == "" {
			next.ServeHTTP(w, r)
			return
		}
		sw := &sniffer{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.succeeded() {
			caller := ""
			if c := skillserver.CallerFromContext(r.Context()); c != nil {
				caller = c.Subject
			}
			u.Count(path, caller, 1)
		}
	})
}

// loadedSkill returns the path of the skill body loads, "" when it loads
// none.
func loadedSkill(ctx context.Context, body []byte, src published.Source) string {
	if len(body) > usageBodyMax || (!bytes.Contains(body, []byte("skills/get")) && !bytes.Contains(body, []byte("/SKILL.md"))) {
		return ""
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || (req.Method != "skills/get" && req.Method != "resources/read") {
		return ""
	}
	snap := src.Snapshot()
	if vs, ok := src.(published.ViewSource); ok {
		var err error
		if snap, err = vs.View(ctx, nil, skillserver.CallerFromContext(ctx)); err != nil {
			return ""
		}
	}
	if sk := snap.Skill(req.Params.URI); sk != nil {
		return sk.Path
	}
	return ""
}

// sniffer keeps the start of a response, to tell a JSON-RPC result from
// an error, and passes everything on.
type sniffer struct {
	http.ResponseWriter
	status int
	head   []byte
}

func (s *sniffer) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *sniffer) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if len(s.head) < 512 {
		s.head = append(s.head, p[:min(len(p), 512-len(s.head))]...)
	}
	return s.ResponseWriter.Write(p)
}

// Flush, Unwrap and SetRPCMethod keep what the handler finds on the
// writer it is given (streaming, the endpoint's method label).
func (s *sniffer) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *sniffer) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *sniffer) SetRPCMethod(m string) {
	if l, ok := s.ResponseWriter.(interface{ SetRPCMethod(string) }); ok {
		l.SetRPCMethod(m)
	}
}

// succeeded reports whether the response is a JSON-RPC result (in JSON
// or in an SSE event).
func (s *sniffer) succeeded() bool {
	if s.status != http.StatusOK {
		return false
	}
	res := bytes.Index(s.head, []byte(`"result":`))
	e := bytes.Index(s.head, []byte(`"error":`))
	return res >= 0 && (e < 0 || res < e)
}

// Load is the loads of one skill over recent days, from every replica's
// flushes ([Source.SkillLoads]).
type Load struct {
	Path    string `json:"path"`
	Loads   int64  `json:"loads"`
	Callers int    `json:"callers"` // distinct, [OtherCaller] counting as one
}

// RecentLoadDays is the window of "recent" loads the web catalog shows.
const RecentLoadDays = 7

// SkillLoads returns the loads of each of paths over the last days days,
// and the distinct callers of each, through the replica's connections.
func (s *Source) SkillLoads(ctx context.Context, paths []string, days int) (map[string]Load, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT path, sum(loads)::bigint, count(DISTINCT caller)::int FROM usage
		WHERE day > current_date - $2::int AND path = ANY($1) GROUP BY path`, paths, days)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" {
			return map[string]Load{}, nil
		}
		return nil, dbError("usage", err)
	}
	out := map[string]Load{}
	var l Load
	_, err = pgx.ForEachRow(rows, []any{&l.Path, &l.Loads, &l.Callers}, func() error { out[l.Path] = l; return nil })
	return out, dbError("usage", err)
}
