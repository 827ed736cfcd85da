package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/scan"
)

// ScanOptions configure the scanners a publish ([PublishOptions.Scan]) or
// a [Rescan] runs on each new version.
type ScanOptions struct {
	// Builtin runs the built-in scanner (package internal/scan).
	Builtin bool
	// External are scanner commands; each gets every new version's folder
	// and prints SARIF. Which commands run is the publisher's
	// configuration, never the database's: a row must not choose what a
	// machine executes.
	External []*scan.External
	// MaxFileBytes bounds the files given to scanners (default
	// DefaultMaxScanFileBytes); larger files are not scanned.
	MaxFileBytes int64
}

// DefaultMaxScanFileBytes bounds the files a scan reads.
const DefaultMaxScanFileBytes = 4 << 20

// Scan policy modes.
const (
	PolicyWarn  = "warn"
	PolicyBlock = "block"
)

// Policy is a namespace's scan policy. The policy of the longest prefix
// of a namespace applies (Namespace "" is every namespace's default); no
// policy at all is warn, checking no allowed-tools.
type Policy struct {
	Namespace string `json:"namespace"`
	// Mode is PolicyWarn (findings are recorded and shown) or PolicyBlock
	// (a publish with an error-level finding is refused, nothing written).
	Mode string `json:"mode"`
	// AllowedTools, when not nil, is what skills of the namespace may
	// pre-approve in allowed-tools (see [scan.Options]).
	AllowedTools []string  `json:"allowedTools,omitempty"`
	UpdatedBy    string    `json:"updatedBy,omitempty"`
	UpdatedAt    time.Time `json:"updatedAt,omitzero"`
}

// ErrBlocked is returned when a namespace's scan policy refuses a publish.
var ErrBlocked = errors.New("refused by the scan policy")

// SetPolicy records p as its namespace's scan policy.
func SetPolicy(ctx context.Context, conn *pgx.Conn, p Policy, who string) error {
	if p.Mode != PolicyWarn && p.Mode != PolicyBlock {
		return fmt.Errorf("registry: scan policy mode %q: want %s or %s", p.Mode, PolicyWarn, PolicyBlock)
	}
	if _, err := Migrate(ctx, conn); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, `INSERT INTO scan_policies (namespace, mode, allowed_tools, updated_by) VALUES ($1, $2, $3, $4)
		ON CONFLICT (namespace) DO UPDATE SET mode = excluded.mode, allowed_tools = excluded.allowed_tools, updated_by = excluded.updated_by, updated_at = now()`,
		strings.Trim(p.Namespace, "/"), p.Mode, p.AllowedTools, orUnknown(who))
	return dbError("scan policy", err)
}

// Policies returns every namespace's scan policy, by namespace.
func Policies(ctx context.Context, conn *pgx.Conn) ([]Policy, error) {
	rows, err := conn.Query(ctx, `SELECT namespace, mode, allowed_tools, updated_by, updated_at FROM scan_policies ORDER BY namespace`)
	if err != nil {
		return nil, dbError("scan policies", err)
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Policy, error) {
		var p Policy
		err := r.Scan(&p.Namespace, &p.Mode, &p.AllowedTools, &p.UpdatedBy, &p.UpdatedAt)
		return p, err
	})
	return ps, dbError("scan policies", err)
}

// policyFor returns the policy that applies to skill path or namespace ns.
func policyFor(ps []Policy, ns string) Policy {
	best := Policy{Namespace: ns, Mode: PolicyWarn}
	found := -1
	for _, p := range ps {
		if (p.Namespace == "" || p.Namespace == ns || strings.HasPrefix(ns, p.Namespace+"/")) && len(p.Namespace) > found {
			best, found = p, len(p.Namespace)
		}
	}
	return best
}

// queuePolicies reads the scan policies in a publish's first round trip.
func queuePolicies(b *pgx.Batch, out *[]Policy) {
	b.Queue(`SELECT namespace, mode, allowed_tools FROM scan_policies`).Query(func(rows pgx.Rows) error {
		var p Policy
		_, err := pgx.ForEachRow(rows, []any{&p.Namespace, &p.Mode, &p.AllowedTools}, func() error {
			*out = append(*out, p)
			return nil
		})
		return err
	})
}

// scanners returns the scanners o configures for a namespace under policy p.
func (o *ScanOptions) scanners(p Policy) []scan.Scanner {
	var out []scan.Scanner
	if o.Builtin {
		out = append(out, &scan.Builtin{Options: scan.Options{AllowedTools: p.AllowedTools}})
	}
	for _, e := range o.External {
		out = append(out, e)
	}
	return out
}

func (o *ScanOptions) names() string {
	var ns []string
	if o.Builtin {
		ns = append(ns, scan.BuiltinScannerName)
	}
	for _, e := range o.External {
		ns = append(ns, e.Name())
	}
	return strings.Join(ns, ",")
}

// runScanners runs scanners over s; a scanner's failure is a finding.
func runScanners(ctx context.Context, scanners []scan.Scanner, s *scan.Skill) []scan.Finding {
	var out []scan.Finding
	for _, sc := range scanners {
		fs, err := sc.Scan(ctx, s)
		if err != nil {
			fs = []scan.Finding{scan.FailureFinding(sc.Name(), err)}
		}
		out = append(out, fs...)
	}
	return out
}

// allowedTools reads a frontmatter's allowed-tools.
func allowedTools(v any, ok bool) []string {
	if !ok {
		return nil
	}
	return scan.ToolsOf(v)
}

// scanRun scans a publish's new versions while the publish goes on:
// content new to the registry as it is read for storing (onRead), the
// rest on a few goroutines; finish waits for both before anything is
// decided.
type scanRun struct {
	opts     *ScanOptions
	policies []Policy
	maxFile  int64
	// Per plan, then new version: the findings of the skill itself
	// (allowed-tools), and those of external scanners and failures.
	pre, post [][][]scan.Finding
	// byDigest holds the built-in file rules' findings of each content
	// (File unset): they depend on the content alone, so content many
	// skills share (a license) is scanned once.
	byDigest sync.Map
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// startScans starts scanning the new versions of plans; nil when o
// configures no scanner. missing is the content the publish reads for
// storing, which onRead scans.
func startScans(ctx context.Context, plans []*nsPlan, o *ScanOptions, policies []Policy, missing []fileRef) *scanRun {
	if o == nil || (!o.Builtin && len(o.External) == 0) {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &scanRun{opts: o, policies: policies, maxFile: o.MaxFileBytes, cancel: cancel,
		pre: make([][][]scan.Finding, len(plans)), post: make([][][]scan.Finding, len(plans))}
	if r.maxFile <= 0 {
		r.maxFile = DefaultMaxScanFileBytes
	}
	stored := make(map[string]bool, len(missing))
	for _, m := range missing {
		stored[m.f.Digest] = true
	}
	type job struct{ p, i int }
	var jobs []job
	policy := make([]Policy, len(plans))
	readers := map[*catalog.Catalog]*contentReader{}
	for pi, p := range plans {
		r.pre[pi], r.post[pi] = make([][]scan.Finding, len(p.news)), make([][]scan.Finding, len(p.news))
		policy[pi] = policyFor(policies, p.ns)
		for i, n := range p.news {
			jobs = append(jobs, job{pi, i})
			if readers[n.cat] == nil {
				readers[n.cat] = newContentReader(n.cat)
			}
		}
	}
	var next atomic.Int64
	workers := min(runtime.GOMAXPROCS(0), 4, max(1, len(jobs)/256))
	if len(o.External) > 0 {
		// External scanners wait on their processes, not on this one's CPU.
		workers = min(4, max(1, len(jobs)))
	}
	var left atomic.Int64
	left.Store(int64(workers))
	for range workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer func() {
				if left.Add(-1) == 0 {
					for _, cr := range readers {
						cr.close()
					}
				}
			}()
			for ctx.Err() == nil {
				k := int(next.Add(1)) - 1
				if k >= len(jobs) {
					return
				}
				j := jobs[k]
				n := &plans[j.p].news[j.i]
				r.pre[j.p][j.i], r.post[j.p][j.i] = r.scanVersion(ctx, n, readers[n.cat], policy[j.p], stored)
			}
		}()
	}
	return r
}

// onRead is the hook of the publish's content reader: it scans content as
// it is read for storing. nil when the built-in scanner does not run.
func (r *scanRun) onRead() func(*catalog.File, []byte) {
	if r == nil || !r.opts.Builtin {
		return nil
	}
	return func(f *catalog.File, data []byte) {
		if f.Size > r.maxFile {
			return
		}
		if _, ok := r.byDigest.Load(f.Digest); !ok {
			r.byDigest.Store(f.Digest, scan.ScanFile(scan.File{Data: data}))
		}
	}
}

// scanVersion runs what is not left to onRead over one new version: the
// skill's own rule, the file rules on content the publish does not read
// (stored already), and the external scanners on the whole folder.
func (r *scanRun) scanVersion(ctx context.Context, n *newVersion, cr *contentReader, p Policy, stored map[string]bool) (pre, post []scan.Finding) {
	sk := n.s
	tools := allowedTools(sk.Frontmatter.Get("allowed-tools"))
	if r.opts.Builtin {
		pre = scan.CheckTools(tools, &scan.Options{AllowedTools: p.AllowedTools})
	}
	var whole *scan.Skill // every file's content, for external scanners
	if len(r.opts.External) > 0 {
		whole = &scan.Skill{Path: sk.Path, AllowedTools: tools}
	}
	for _, f := range sk.Files {
		if f.Size > r.maxFile {
			continue
		}
		_, scanned := r.byDigest.Load(f.Digest)
		if whole == nil && (scanned || stored[f.Digest]) {
			continue
		}
		data, err := cr.read(f, nil)
		if err != nil {
			return pre, append(post, scan.FailureFinding(scan.BuiltinScannerName, fmt.Errorf("reading %s for the scanners: %w", f.Path, err)))
		}
		if whole != nil {
			whole.Files = append(whole.Files, scan.File{Path: relURI(sk, f), Data: data})
		}
		if r.opts.Builtin && !scanned {
			r.byDigest.Store(f.Digest, scan.ScanFile(scan.File{Data: data}))
		}
	}
	if whole != nil {
		for _, e := range r.opts.External {
			fs, err := e.Scan(ctx, whole)
			if err != nil {
				fs = []scan.Finding{scan.FailureFinding(e.Name(), err)}
			}
			post = append(post, fs...)
		}
	}
	return pre, post
}

// findingsOf assembles the findings of plan pi's new version i.
func (r *scanRun) findingsOf(pi, i int, n *newVersion) []scan.Finding {
	out := slices.Clone(r.pre[pi][i])
	if r.opts.Builtin {
		for _, f := range n.s.Files {
			if f.Size > r.maxFile {
				continue
			}
			fs, ok := r.byDigest.Load(f.Digest)
			if !ok {
				// Not read: the publish failed reading it, or was stopped.
				out = append(out, scan.FailureFinding(scan.BuiltinScannerName, fmt.Errorf("%s was not scanned", f.Path)))
				continue
			}
			rel := relURI(n.s, f)
			for _, x := range fs.([]scan.Finding) {
				x.File = rel
				out = append(out, x)
			}
		}
	}
	return append(out, r.post[pi][i]...)
}

// stop ends the scans early (the publish failed); safe on nil.
func (r *scanRun) stop() {
	if r != nil {
		r.cancel()
		r.wg.Wait()
	}
}

// finish waits for the scans, refuses the publish when a blocking
// namespace has an error-level finding, gives each change its findings,
// copies the scan rows into tx and queues the findings into b (the
// publish's metadata).
func (r *scanRun) finish(ctx context.Context, tx pgx.Tx, b *pgx.Batch, plans []*nsPlan) error {
	if r == nil {
		return nil
	}
	r.wg.Wait()
	found := make([][][]scan.Finding, len(plans))
	for pi, p := range plans {
		found[pi] = make([][]scan.Finding, len(p.news))
		for i := range p.news {
			found[pi][i] = r.findingsOf(pi, i, &p.news[i])
		}
	}
	var blocked []string
	blockedNS := ""
	for pi, p := range plans {
		if policyFor(r.policies, p.ns).Mode != PolicyBlock {
			continue
		}
		for i, n := range p.news {
			for _, f := range found[pi][i] {
				if f.Level == scan.LevelError {
					if blockedNS == "" {
						blockedNS = nsName(p.ns)
					}
					blocked = append(blocked, fmt.Sprintf("%s v%d: %s", n.s.Path, n.version, f))
				}
			}
		}
	}
	if len(blocked) > 0 {
		if len(blocked) > 10 {
			blocked = append(blocked[:10], fmt.Sprintf("and %d more", len(blocked)-10))
		}
		return fmt.Errorf("registry: %w of %s (nothing was published; fix them, or ask an administrator to change the policy with skillport registry scan-policy):\n  %s", ErrBlocked, blockedNS, strings.Join(blocked, "\n  "))
	}
	var sc struct {
		path    []string
		version []int32
	}
	var fd findingRows
	for pi, p := range plans {
		byPath := map[string][]scan.Finding{}
		for i, n := range p.news {
			sc.path, sc.version = append(sc.path, n.s.Path), append(sc.version, int32(n.version))
			fs := found[pi][i]
			if len(fs) > 0 {
				byPath[n.s.Path] = fs
			}
			fd.add(n.s.Path, n.version, fs)
		}
		for _, cs := range [][]Change{p.res.Added, p.res.Changed} {
			for i := range cs {
				cs[i].Findings = byPath[cs[i].Path]
			}
		}
	}
	if len(sc.path) > 0 {
		// New versions have no scan row yet (version numbers are never
		// reused): COPY, which cost the server a fraction of an insert of
		// the same rows with a conflict clause.
		names := r.opts.names()
		i := -1
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"scans"}, []string{"path", "version", "scanners"}, pgx.CopyFromFunc(func() ([]any, error) {
			if i++; i == len(sc.path) {
				return nil, nil
			}
			return []any{sc.path[i], sc.version[i], names}, nil
		}))
		if err != nil {
			return err
		}
	}
	fd.queue(b)
	return nil
}

// findingRows are findings to insert, by column.
type findingRows struct {
	path, scanner, rule, level, file, msg []string
	version, line                         []int32
}

func (fd *findingRows) add(path string, version int, fs []scan.Finding) {
	for _, f := range fs {
		fd.path, fd.version, fd.scanner, fd.rule = append(fd.path, path), append(fd.version, int32(version)), append(fd.scanner, f.Scanner), append(fd.rule, f.RuleID)
		fd.level, fd.file, fd.line, fd.msg = append(fd.level, f.Level), append(fd.file, f.File), append(fd.line, int32(f.Line)), append(fd.msg, f.Message)
	}
}

// queue queues the insert of the rows, if any, into b.
func (fd *findingRows) queue(b *pgx.Batch) {
	if len(fd.path) == 0 {
		return
	}
	b.Queue(`INSERT INTO findings (path, version, scanner, rule_id, level, file, line, message)
		SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[])`,
		fd.path, fd.version, fd.scanner, fd.rule, fd.level, fd.file, fd.line, fd.msg)
}

// Scanned is one version a [Rescan] scanned.
type Scanned struct {
	Path     string         `json:"path"`
	Version  int            `json:"version"`
	Findings []scan.Finding `json:"findings"`
}

// Rescan runs the scanners again on the current version of every skill at
// or below target ("" for every skill), replacing their findings, and
// records a rescan event for each. A rescan refuses nothing: under a
// blocking policy its findings are reported, and what to do (yank, roll
// back) is an operator's call.
func Rescan(ctx context.Context, conn *pgx.Conn, target string, o *ScanOptions, who string) ([]Scanned, error) {
	if o == nil || (!o.Builtin && len(o.External) == 0) {
		return nil, errors.New("registry: rescan: no scanner configured")
	}
	if _, err := Migrate(ctx, conn); err != nil {
		return nil, err
	}
	target = strings.Trim(target, "/")
	type cur struct {
		path, ns string
		version  int
		m        manifest
	}
	rows, err := conn.Query(ctx, `SELECT s.path, s.namespace, s.current, v.manifest::text FROM skills s
		JOIN versions v ON v.path = s.path AND v.version = s.current
		WHERE $1 = '' OR s.path = $1 OR starts_with(s.path, $1 || '/') ORDER BY s.path`, target)
	if err != nil {
		return nil, dbError("rescan", err)
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (cur, error) {
		var c cur
		var text string
		if err := r.Scan(&c.path, &c.ns, &c.version, &text); err != nil {
			return c, err
		}
		return c, json.Unmarshal([]byte(text), &c.m)
	})
	if err != nil {
		return nil, dbError("rescan", err)
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("registry: rescan %q: no skill is served there: %w (see skillport registry ls)", target, ErrUnknown)
	}
	policies, err := Policies(ctx, conn)
	if err != nil {
		return nil, err
	}
	maxFile := o.MaxFileBytes
	if maxFile <= 0 {
		maxFile = DefaultMaxScanFileBytes
	}
	out := make([]Scanned, 0, len(cs))
	for _, c := range cs {
		var fm map[string]any
		_ = json.Unmarshal(c.m.Frontmatter, &fm)
		at, ok := fm["allowed-tools"]
		s := &scan.Skill{Path: c.path, AllowedTools: allowedTools(at, ok)}
		var digests []string
		for _, f := range c.m.Files {
			if f.Size <= maxFile {
				digests = append(digests, f.Digest)
			}
		}
		data := map[string][]byte{}
		brows, err := conn.Query(ctx, `SELECT digest, data FROM blobs WHERE digest = ANY($1)`, digests)
		if err != nil {
			return nil, dbError("rescan", err)
		}
		var d string
		var b []byte
		if _, err := pgx.ForEachRow(brows, []any{&d, &b}, func() error { data[d] = slices.Clone(b); return nil }); err != nil {
			return nil, dbError("rescan", err)
		}
		for _, f := range c.m.Files {
			if f.Size <= maxFile {
				s.Files = append(s.Files, scan.File{Path: f.Rel, Data: data[f.Digest]})
			}
		}
		found := runScanners(ctx, o.scanners(policyFor(policies, c.ns)), s)
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(`DELETE FROM findings WHERE path = $1 AND version = $2`, c.path, c.version)
			b.Queue(`INSERT INTO scans (path, version, scanners) VALUES ($1, $2, $3)
				ON CONFLICT (path, version) DO UPDATE SET scanned_at = now(), scanners = excluded.scanners`, c.path, c.version, o.names())
			var fd findingRows
			fd.add(c.path, c.version, found)
			fd.queue(b)
			b.Queue(`INSERT INTO events (who, action, path, version, detail) VALUES ($1, 'rescan', $2, $3, $4)`,
				orUnknown(who), c.path, c.version, fmt.Sprintf("%d findings by %s", len(found), o.names()))
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			return out, dbError("rescan", err)
		}
		out = append(out, Scanned{Path: c.path, Version: c.version, Findings: found})
	}
	// Replicas serve each entry's findings: they re-read the rescanned skills.
	paths := make([]string, len(out))
	for i, s := range out {
		paths[i] = s.Path
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		gen, err := bump(ctx, tx)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE skills SET generation = $2 WHERE path = ANY($1)`, paths, gen)
		return err
	})
	return out, dbError("rescan (the findings are stored; notifying replicas failed)", err)
}
