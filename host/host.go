// Package host is the consumer side of Skills over MCP (SEP-2640): it
// discovers skills on MCP servers and local folders, keeps them in one
// registry keyed by (origin label, uri), and loads them for a model only
// after approval and verification.
//
// A [Host] is configured with [Origin]s and [Options]. [Host.Connect]
// connects to every server concurrently, lists skills (every page, within
// caps and a per-call timeout) from those that declared the extension, and
// reads local folders. Nothing but listing happens then: no file is fetched
// on connect, listing or approval. [Host.Load] asks the [approval.Approver]
// (unless a persisted approval bound to the exact resources set exists),
// reads SKILL.md, checks its size, SHA-256 and frontmatter against the entry,
// and returns a [*Loaded] skill: the acting window, which holds the entry and
// resolves and verifies every later file read against it.
//
// [Host.Catalog] renders the skills block of a system prompt and
// [Host.Tools] returns model-facing tool handlers (read_skill,
// read_skill_file, list_skill_dir) that tag MCP content with its origin and
// mark it untrusted.
package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/cache"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/wire"
)

// Defaults for [Options].
const (
	DefaultCallTimeout     = 10 * time.Second
	DefaultMaxPages        = 50
	DefaultMaxEntries      = 5000
	DefaultRefreshInterval = 5 * time.Second
	DefaultFetchBudget     = 200 << 20
)

// Options configure a Host. The zero value is usable: deny-by-default
// approvals kept in memory, no disk cache.
type Options struct {
	// ClientInfo identifies the host to servers; default "skillport".
	ClientInfo *mcp.Implementation
	// CallTimeout bounds each call to a server (connect, each page, each
	// read). Default 10 s.
	CallTimeout time.Duration
	// MaxPages and MaxEntries cap one server's listing; what is past them is
	// left out with a diagnostic (the listing is then partial, and skills
	// stay loadable by URI). Defaults 50 pages, 5000 entries.
	MaxPages   int
	MaxEntries int
	// RefreshInterval is the least time between two re-listings of one
	// server triggered by notifications/resources/list_changed. Default 5 s.
	RefreshInterval time.Duration
	// FetchBudget bounds the bytes read from one server in the life of the
	// Host. Default 200 MiB; negative means no budget.
	FetchBudget int64
	// AllowDynamic lets skills whose resources are "dynamic" be loaded,
	// after approval on every load; by default they are declined.
	AllowDynamic bool
	// Approver decides loads, cross-origin reads and execution. Default
	// approval.Deny.
	Approver approval.Approver
	// Approvals persists approvals; default an in-memory store.
	Approvals *approval.Store
	// Cache keeps verified files on disk; nil disables it.
	Cache *cache.Cache
	// Logger receives diagnostics; default slog.Default().
	Logger *slog.Logger
	// OpenGit connects to an origin with a git source (Origin.Git): it
	// returns a transport to a server publishing the source's commit, and
	// warnings about what it left out. gitorigin.Opener is the usual one;
	// without it, git origins are unavailable.
	OpenGit func(ctx context.Context, spec string) (mcp.Transport, []string, error)
	// OpenOCI connects to an origin with an OCI source (Origin.OCI), as
	// OpenGit does for git; gitorigin.OCIOpener is the usual one.
	OpenOCI func(ctx context.Context, ref string) (mcp.Transport, []string, error)
	// ServerStderr receives the stderr of stdio servers; default discarded.
	ServerStderr io.Writer
	// OnChange is called after the registry changed (a refresh, a revoked
	// approval). It must not block.
	OnChange func()
	// Trust applies a signature trust policy (docs/signing.md) to what a
	// server lists or gets: it is called with the origin and the entries
	// that decoded, once per listing, and returns one error per entry,
	// nil to keep it. A refused entry is left out with a Refused
	// diagnostic naming the skill, the origin and the reason. Trust may
	// set each kept entry's Signer and SignatureNote. Local folders are
	// the user's own and are not checked. nil checks nothing.
	Trust func(origin Origin, entries []*Entry) []error
}

// Severity says whether a diagnostic reports something left out (Error)
// or a note (Warning). It is [skill.Severity]: one type, one encoding
// ("error", "warning") for every diagnostic the library reports.
type Severity = skill.Severity

// Severities.
const (
	Warning = skill.Warning
	Error   = skill.Error
)

// Diagnostic reports something the user should know: an entry left out, a
// server that failed, a capped listing.
type Diagnostic struct {
	Origin   string
	URI      string
	Severity Severity
	// Deviation marks a warning about a server that breaks a rule of the
	// extension in a way the host works around without giving up a check
	// that protects the user (a missing size: the digest still binds the
	// content and reads stay bounded). Tools that fail on warnings, like
	// skillport verify, report it and pass.
	Deviation bool
	// Refused marks an entry the server listed that the host left out
	// (invalid, or over a limit every host applies): a skill the user
	// does not get, however many others verify. Tools that check a
	// server, like skillport verify, count it as failed.
	Refused bool
	Message string
	Err     error
}

// String formats the diagnostic as one line: origin, severity, URI, message.
func (d Diagnostic) String() string {
	s := d.Origin + ": " + d.Severity.String() + ": "
	if d.URI != "" {
		s += fmt.Sprintf("%q: ", clip(d.URI))
	}
	return s + d.Message
}

// OriginStatus reports the state of one origin.
type OriginStatus struct {
	Label string
	Kind  Kind
	Where string
	// ReportedName is the server's serverInfo.name: display only, never identity.
	ReportedName string
	// ReportedVersion is the server's serverInfo.version (for a git
	// origin, the served commit): display and lock records only.
	ReportedVersion string
	// Connected is set once the server answered initialize.
	Connected bool
	// Declared is set when the server declared the Skills extension.
	Declared bool
	// DirectoryRead is the server's directoryRead setting.
	DirectoryRead bool
	// Profile is "" when the server declared the Skills extension, else the
	// compatibility profile its skills are read through (ProfileIndex,
	// ProfileLegacy); such skills cannot be fully verified.
	Profile string
	// Skills is how many entries it contributed.
	Skills int
	// Partial is set when the listing was cut short (caps, a failed page).
	Partial bool
	// Refused counts the entries of the last listing the host left out,
	// each also a Diagnostic with Refused set (while the origin's
	// diagnostics are not capped).
	Refused int
	// Err is why the origin contributes nothing, if it does not.
	Err error
	// Listed is when the last listing completed.
	Listed time.Time
	// Discovery is how long the origin's first discovery took: connecting,
	// initializing and every page of the first listing (or opening the
	// folder), measured from when Connect started it. It shows which
	// origin held discovery up.
	Discovery time.Duration
}

// Host discovers, registers and loads skills. It is safe for concurrent use.
type Host struct {
	opts    Options
	log     *slog.Logger
	origins []*originState
	byLabel map[string]*originState

	rb rebuilds // coalesces registry rebuilds
	// changes counts changes to the origins' entries; built is the count
	// the registry was last rebuilt at. A reader rebuilds when they differ.
	changes, built atomic.Uint64
	rebuildsRun    atomic.Int64 // for tests

	mu        sync.RWMutex
	entries   []*Entry // registry, sorted by origin order then path
	byKey     map[key]*Entry
	qualified map[string]*Entry
	closed    bool
}

type key struct{ origin, uri string }

// New validates the origins and returns a Host. Call Connect to reach them.
func New(origins []Origin, opts *Options) (*Host, error) {
	h := &Host{byLabel: map[string]*originState{}, byKey: map[key]*Entry{}, qualified: map[string]*Entry{}}
	if opts != nil {
		h.opts = *opts
	}
	o := &h.opts
	if o.ClientInfo == nil {
		o.ClientInfo = &mcp.Implementation{Name: "skillport", Version: "0"}
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.FetchBudget == 0 {
		o.FetchBudget = DefaultFetchBudget
	}
	if o.Approver == nil {
		o.Approver = approval.Deny{}
	}
	if o.Approvals == nil {
		o.Approvals, _ = approval.Open("")
	}
	if o.ServerStderr == nil {
		o.ServerStderr = io.Discard
	}
	h.log = o.Logger
	if h.log == nil {
		h.log = slog.Default()
	}
	var dirs []string
	for i := range origins {
		og := origins[i]
		if err := og.validate(); err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
		if _, dup := h.byLabel[og.Label]; dup {
			return nil, fmt.Errorf("host: two origins are labelled %q; labels must be unique", og.Label)
		}
		st := &originState{h: h, cfg: og, order: i}
		h.origins = append(h.origins, st)
		h.byLabel[og.Label] = st
		if og.Dir != "" {
			dirs = append(dirs, og.Dir)
		}
	}
	if o.Cache != nil {
		if err := o.Cache.CheckOutside(dirs...); err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
	}
	return h, nil
}

// Connect connects to every origin concurrently and lists their skills. An
// origin that fails (unreachable, timeout, no extension) is reported in
// Origins and Diagnostics and does not affect the others; Connect returns
// an error only if ctx ends first.
func (h *Host) Connect(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, o := range h.origins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.start(ctx)
			// Publish each origin's skills as soon as it answers: one slow
			// server must not hide the others' skills until it times out.
			h.rebuild()
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// Refresh re-lists every connected server now, concurrently.
func (h *Host) Refresh(ctx context.Context) {
	var wg sync.WaitGroup
	for _, o := range h.origins {
		if o.cfg.Kind() != KindMCP {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.relist(ctx)
		}()
	}
	wg.Wait()
	h.rebuild()
}

// Close disconnects from every server.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	var errs []error
	for _, o := range h.origins {
		errs = append(errs, o.close())
	}
	return errors.Join(errs...)
}

// Skills returns the registry: every registered skill, declined ones
// included, in origin order then by path.
func (h *Host) Skills() []*Entry {
	h.fresh()
	h.mu.RLock()
	defer h.mu.RUnlock()
	return slices.Clone(h.entries)
}

// Origins reports each origin's state, in configuration order.
func (h *Host) Origins() []OriginStatus {
	out := make([]OriginStatus, len(h.origins))
	for i, o := range h.origins {
		out[i] = o.statusCopy()
	}
	return out
}

// Diagnostics returns what went wrong or was left out, per origin.
func (h *Host) Diagnostics() []Diagnostic {
	var out []Diagnostic
	for _, o := range h.origins {
		o.mu.Lock()
		out = append(out, o.diags...)
		o.mu.Unlock()
	}
	return out
}

// Forget removes everything the host keeps about an origin: its cached
// files and its persisted approvals. Call it when the user removes a server.
func (h *Host) Forget(label string) error {
	var errs []error
	if h.opts.Cache != nil {
		errs = append(errs, h.opts.Cache.RemoveOrigin(label))
	}
	_, err := h.opts.Approvals.RemoveOrigin(label)
	return errors.Join(append(errs, err)...)
}

// Lookup finds a skill by the name the model or user gave: a qualified name
// as Entry.Qualified shows it ("refunds", "billing/refunds",
// "docs__refunds"), the CLI form "docs:billing/refunds", or "docs:" followed
// by the SKILL.md URI. A bare name shared by several skills is refused with
// ErrAmbiguous listing the qualified names; a URI without an origin label is
// never resolved by searching servers.
func (h *Host) Lookup(name string) (*Entry, error) {
	h.fresh()
	h.mu.RLock()
	defer h.mu.RUnlock()
	return lookup(h.entries, h.qualified, h.byLabel, name)
}

// Names is a set of registry entries named as if they were all the
// registry held. A host that shows each caller only some skills (a
// gateway with visibility rules) names the skills by it: the qualified
// names, SharedWith and ambiguity errors of the full registry would
// reveal the skills the caller may not see.
type Names struct {
	entries   []*Entry
	qualified map[string]*Entry
	labels    map[string]*originState
}

// Qualify names entries, a subset of [Host.Skills], exactly as the
// registry names its entries, over entries alone. The entries are copies:
// Qualified and SharedWith are set anew, the registry is left alone.
func (h *Host) Qualify(entries []*Entry) *Names {
	out, q := qualify(entries, func(label string) (int, bool) {
		o := h.byLabel[label]
		if o == nil {
			return len(h.origins), false
		}
		return o.order, o.cfg.Kind() == KindFilesystem
	})
	return &Names{entries: out, qualified: q, labels: h.byLabel}
}

// Entries returns the named entries in registry order (origin order,
// then URI).
func (n *Names) Entries() []*Entry { return slices.Clone(n.entries) }

// Lookup is [Host.Lookup] over the named entries only: an entry not in
// the set is unknown, and is neither a candidate nor named in an
// ambiguity error.
func (n *Names) Lookup(name string) (*Entry, error) {
	return lookup(n.entries, n.qualified, n.labels, name)
}

func lookup(entries []*Entry, qualified map[string]*Entry, labels map[string]*originState, name string) (*Entry, error) {
	if e, ok := qualified[name]; ok {
		return e, nil
	}
	label, rest, ok := strings.Cut(name, "__")
	if !ok || labels[label] == nil {
		label, rest, ok = strings.Cut(name, ":")
	}
	if ok && labels[label] != nil {
		var match []*Entry
		for _, e := range entries {
			if e.Origin != label {
				continue
			}
			if e.URI == rest || e.Path == rest || e.displayPath() == rest {
				return e, nil
			}
			if e.Name == rest || strings.HasSuffix(e.Path, "/"+rest) {
				match = append(match, e)
			}
		}
		return one(name, match)
	}
	var match []*Entry
	for _, e := range entries {
		if e.Name == name {
			match = append(match, e)
		}
	}
	return one(name, match)
}

func one(name string, match []*Entry) (*Entry, error) {
	switch len(match) {
	case 0:
		return nil, fmt.Errorf("%w %q", ErrUnknownSkill, name)
	case 1:
		return match[0], nil
	}
	var names []string
	for _, e := range match {
		names = append(names, e.CLIName())
	}
	return nil, fmt.Errorf("%w %q: it names %d skills; use one of %s", ErrAmbiguous, name, len(match), strings.Join(names, ", "))
}

// Get confirms a skill reached by URI rather than listing (from server
// instructions, another skill, or the user) with skills/get on the origin
// labelled label, and registers it. A URI the server does not
// answer for is not a skill.
func (h *Host) Get(ctx context.Context, label, uri string) (*Entry, error) {
	o := h.byLabel[label]
	if o == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownOrigin, label)
	}
	if o.cfg.Kind() != KindMCP {
		h.fresh()
		h.mu.RLock()
		e := h.byKey[key{label, uri}]
		h.mu.RUnlock()
		if e == nil {
			return nil, fmt.Errorf("%w: %s has no skill %s", ErrUnknownSkill, label, uri)
		}
		return e, nil
	}
	e, err := o.get(ctx, uri)
	if err != nil {
		return nil, err
	}
	h.rebuild()
	h.fresh()
	h.mu.RLock()
	defer h.mu.RUnlock()
	if r := h.byKey[key{label, uri}]; r != nil {
		return r, nil
	}
	return e, nil
}

// rebuild records that the origins' entries changed and tells OnChange.
// The registry and its names are recomputed by the next reader (fresh):
// 20 origins answering one after another then cost one rebuild at the
// first read, not 20 each linear in all entries, and a reader still sees
// every origin that answered before it asked.
func (h *Host) rebuild() {
	h.changes.Add(1)
	if h.opts.OnChange != nil {
		h.opts.OnChange()
	}
}

// fresh brings the registry up to date with every change recorded before
// the call. Every reader of entries, byKey and qualified calls it first.
func (h *Host) fresh() {
	if h.changes.Load() != h.built.Load() {
		h.rb.do(h.rebuildNow)
	}
}

// rebuilds runs one rebuild at a time and lets requests that arrive while
// one runs share the next: when 20 origins answer together the registry
// is rebuilt a few times, not 20 (each rebuild is linear in all entries).
type rebuilds struct {
	mu              sync.Mutex
	cond            *sync.Cond
	requested, done uint64
	running         bool
}

// do returns once a rebuild that began after the call has finished, so the
// caller's changes are in the registry.
func (r *rebuilds) do(rebuild func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cond == nil {
		r.cond = sync.NewCond(&r.mu)
	}
	r.requested++
	mine := r.requested
	for r.done < mine {
		if r.running {
			r.cond.Wait()
			continue
		}
		r.running = true
		covers := r.requested
		r.mu.Unlock()
		rebuild()
		r.mu.Lock()
		r.running = false
		r.done = covers
		r.cond.Broadcast()
	}
}

func (h *Host) rebuildNow() {
	h.rebuildsRun.Add(1)
	gen := h.changes.Load() // every change before this is in the snapshots below
	var all []*Entry
	for _, o := range h.origins {
		all = append(all, o.snapshot()...)
	}
	entries, qualified := qualify(all, func(label string) (int, bool) {
		o := h.byLabel[label]
		return o.order, o.cfg.Kind() == KindFilesystem
	})
	byKey := make(map[key]*Entry, len(entries))
	for _, e := range entries {
		byKey[key{e.Origin, e.URI}] = e
	}
	h.mu.Lock()
	h.entries, h.byKey, h.qualified = entries, byKey, qualified
	h.mu.Unlock()
	h.built.Store(gen)
}

// current returns the registry's entry for the identity of e, which may be
// newer than e.
func (h *Host) current(e *Entry) *Entry {
	h.fresh()
	h.mu.RLock()
	defer h.mu.RUnlock()
	if c := h.byKey[key{e.Origin, e.URI}]; c != nil {
		return c
	}
	return e
}

// qualify assigns each entry the name the model sees. Within one origin,
// entries sharing a name are told apart by the fewest trailing path segments
// that differ ("billing/refunds", "support/refunds"). Across origins, a name
// held by a filesystem skill stays with the first filesystem origin that has
// it; every other holder, and every MCP holder of a name several origins
// share, is prefixed with its label ("docs__refunds"). Nothing is dropped or
// silently shadowed: all sharers record each other in SharedWith.
func qualify(in []*Entry, origin func(label string) (order int, fs bool)) ([]*Entry, map[string]*Entry) {
	// The copies in one array, and each entry's origin order looked up
	// once rather than in every comparison of the sort.
	copies := make([]Entry, len(in))
	type sorted struct {
		e     *Entry
		order int
	}
	keyed := make([]sorted, len(in))
	for i, e := range in {
		c := &copies[i]
		*c = *e
		c.SharedWith = nil
		c.Qualified = e.Name
		keyed[i].e = c
		keyed[i].order, _ = origin(e.Origin)
	}
	slices.SortStableFunc(keyed, func(a, b sorted) int {
		if a.order != b.order {
			return cmp.Compare(a.order, b.order)
		}
		return strings.Compare(a.e.URI, b.e.URI)
	})
	out := make([]*Entry, len(in))
	for i, k := range keyed {
		out[i] = k.e
	}
	byName := map[string][]*Entry{}
	for _, e := range out {
		byName[e.Name] = append(byName[e.Name], e)
	}
	for _, group := range byName {
		if len(group) < 2 {
			continue
		}
		perOrigin := map[string][]*Entry{}
		for _, e := range group {
			perOrigin[e.Origin] = append(perOrigin[e.Origin], e)
		}
		for _, g := range perOrigin {
			if len(g) > 1 {
				distinguish(g)
			}
		}
		keeper := ""
		for _, e := range group { // sorted by origin order
			if _, fs := origin(e.Origin); fs {
				keeper = e.Origin
				break
			}
		}
		crossOrigin := len(perOrigin) > 1
		// Each sharer's "origin:path" once: a name many origins share
		// (the same server configured 20 times) would otherwise build
		// the same strings len(group)² times on every rebuild.
		ids := make([]string, len(group))
		for i, o := range group {
			ids[i] = o.Origin + ":" + o.Path
		}
		// Every sharer's SharedWith in one array, each capped to its own part.
		shared := make([]string, 0, len(group)*(len(group)-1))
		for i, e := range group {
			if crossOrigin && e.Origin != keeper {
				e.Qualified = e.Origin + "__" + e.Qualified
			}
			start := len(shared)
			shared = append(append(shared, ids[:i]...), ids[i+1:]...)
			e.SharedWith = shared[start:len(shared):len(shared)]
		}
	}
	qualified := make(map[string]*Entry, len(out))
	for _, e := range out {
		if prev, dup := qualified[e.Qualified]; dup {
			// Only possible for paths that differ in scheme alone; fall back
			// to the full URI, which is unique within an origin.
			e.Qualified = e.Origin + "__" + e.URI
			_ = prev
		}
		qualified[e.Qualified] = e
	}
	return out, qualified
}

// distinguish sets Qualified for same-name entries of one origin to the
// shortest path suffix that no other of them shares.
func distinguish(g []*Entry) {
	segs := make([][]string, len(g))
	for i, e := range g {
		segs[i] = strings.Split(e.Path, "/")
	}
	for i, e := range g {
		for k := 2; k <= len(segs[i]); k++ {
			suf := strings.Join(segs[i][len(segs[i])-k:], "/")
			unique := true
			for j := range g {
				if j != i && (strings.HasSuffix("/"+strings.Join(segs[j], "/"), "/"+suf)) {
					unique = false
					break
				}
			}
			if unique {
				e.Qualified = suf
				break
			}
		}
		if e.Qualified == e.Name {
			e.Qualified = e.Path
		}
	}
}

// listResult is skills/list as received: skillclient's page, whose
// entries stay raw so that one bad entry is left out on its own.
type listResult = skillclient.ListPage

// getResult is skills/get as received.
type getResult struct {
	mcp.ResultBase
	ResultType *string         `json:"resultType"`
	Skill      json.RawMessage `json:"skill"`
	// Instructions is set instead of Skill by a SEP-2076 skills/get by
	// name, and Files lists its supporting files (kept raw: one bad item
	// is left out on its own).
	Instructions *string         `json:"instructions"`
	Files        json.RawMessage `json:"files"`
	TTLMs        *int64          `json:"ttlMs"`
	CacheScope   *string         `json:"cacheScope"`
}

func newClient(h *Host, o *originState) *mcp.Client {
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(wire.ExtensionID, nil)
	c := mcp.NewClient(h.opts.ClientInfo, &mcp.ClientOptions{
		Capabilities: caps,
		Logger:       h.log.With("origin", o.cfg.Label),
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			o.scheduleRefresh()
		},
	})
	// Registration only fails for standard method names; these are not.
	_ = mcp.AddSendingCustomMethod[*wire.ListSkillsParams, *listResult](c, wire.MethodListSkills)
	_ = mcp.AddSendingCustomMethod[*wire.GetSkillParams, *getResult](c, wire.MethodGetSkill)
	_ = mcp.AddSendingCustomMethod[*wire.ReadDirectoryParams, *wire.ReadDirectoryResult](c, wire.MethodReadDirectory)
	if compatProfiles != nil {
		compatProfiles.client(c)
	}
	return c
}
