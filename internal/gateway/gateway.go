// Package gateway re-exposes the skills a [host.Host] aggregates as a plain
// MCP server, so that any MCP client (Claude Desktop, Cursor, VS Code,
// Codex) gets a team's skills as tools, with every host-side protection
// applied: approval bound to content, verification of every byte, origin
// tagging, lazy retrieval.
//
// A [Gateway] serves, on one go-sdk [mcp.Server]:
//
//   - the tools read_skill(name), read_skill_file(skill, path),
//     list_skill_dir(skill, path) and search_skills(query, limit), whose
//     results wrap skill content as untrusted data tagged with its origin;
//   - the catalog of skills in the server instructions and in the read_skill
//     description, within a token budget, beyond which the model is told to
//     use search_skills;
//   - one prompt per skill, whose message carries the verified skill;
//   - the Skills Extension itself (skills/list, skills/get, resources), each
//     upstream skill re-published as skill://<origin>/<path>/SKILL.md with
//     the upstream digests, every file fetched and verified on demand.
//
// Approvals go to the connected client as MCP elicitation when it supports
// it (see [Elicitation]), otherwise to the configured policy. Upstream
// changes reach clients as tools, prompts and resources list_changed
// notifications.
package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/cache"
	"github.com/skillport/skillport/internal/gitorigin"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/sdklog"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// Defaults for [Options].
const (
	DefaultEnumLimit   = 100
	DefaultUpdateDelay = 100 * time.Millisecond
)

// Options configure a Gateway. The zero value is usable.
type Options struct {
	// Trust is the host's signature trust policy (host.Options.Trust):
	// skills it refuses are not published. nil checks nothing.
	Trust func(host.Origin, []*host.Entry) []error
	// Implementation names the gateway to clients; default "skillport-gateway".
	Implementation *mcp.Implementation
	// TokenBudget bounds the catalog in the instructions and in the
	// read_skill description, in tokens of four bytes; default
	// DefaultTokenBudget. Skills beyond it are found with search_skills.
	TokenBudget int
	// EnumLimit is the largest catalog for which read_skill's name parameter
	// is an enum of the qualified names; default DefaultEnumLimit, negative
	// means never.
	EnumLimit int
	// IndexBodies adds SKILL.md bodies to the search index: local skills'
	// when the index is built, MCP skills' once loaded. MCP bodies are never
	// fetched for the index: the host must not retrieve files ahead of need.
	IndexBodies bool
	// Filters hide skills per origin label; an origin without one shows all.
	Filters map[string]*Filter
	// StartupWait bounds how long requests wait for the upstreams to be
	// listed, so that the first catalog is complete; default
	// DefaultStartupWait. initialize waits at most HandshakeWait. Skills
	// listed later arrive with list_changed.
	StartupWait time.Duration
	// UpdateDelay coalesces bursts of registry changes into one update of
	// tools, prompts and resources; default DefaultUpdateDelay.
	UpdateDelay time.Duration
	// ApproveHint tells the model (and through it the user) how to approve
	// a skill when approval was refused; it may contain %[1]s for the
	// origin label and %[2]s for the skill name. Default: a sentence about
	// elicitation and the approvals policy.
	ApproveHint string
	// Logger receives diagnostics; default slog.Default().
	Logger *slog.Logger
	// Visible, when set, is the one decision of which caller (from the
	// request's bearer token, nil for anonymous) sees which skill, applied
	// to everything the gateway answers: the tools (read_skill,
	// read_skill_file, list_skill_dir, search_skills), the prompts, the
	// instructions' catalog and the re-published resources. The skill it
	// is asked about is the re-published one: Path is "<origin>/<path>".
	// A hidden skill is answered as an absent one. The read_skill
	// description then carries no catalog (it is the same for every
	// caller); the instructions carry the caller's.
	Visible func(c *skillserver.Caller, sk *catalog.Skill) bool
}

// Gateway is a host re-exposed as an MCP server. It is safe for concurrent use.
type Gateway struct {
	h    *host.Host
	opts Options
	log  *slog.Logger
	srv  *mcp.Server
	ext  *skillserver.Server
	src  *source
	pub  published.ViewSource // src seen through Options.Visible; nil without
	// callers tracks sessions' callers with Options.Visible, so that
	// prompts/list_changed reaches only those whose prompts changed.
	callers *published.SessionCallers

	startOnce sync.Once
	started   atomic.Int64 // unix nanoseconds when Start was called
	ready     chan struct{}
	built     atomic.Bool

	updateMu sync.Mutex // serialises update
	view     atomic.Pointer[view]
	toolDefs map[string]string // registered tool name -> JSON of its definition
	prompts  map[string]string // registered prompt name -> signature

	timerMu sync.Mutex
	timer   *time.Timer
	closed  bool

	winMu   sync.Mutex
	windows map[key]*window

	idxMu     sync.Mutex
	idx       *searchIndex
	bodies    map[key]string
	bodiesGen int

	// views caches, with Options.Visible, each caller's view with the
	// names qualified over what it sees (at most maxCallerViews).
	viewsMu sync.Mutex
	views   map[callerViewKey]*view

	// holds tie read_skill_file charges to the HTTP requests that carry
	// the calls (hold.go).
	holds holds
}

type key struct{ origin, uri string }

func keyOf(e *host.Entry) key { return key{e.Origin, e.URI} }

// view is the set of skills the gateway shows: loadable and admitted by the
// origin's filter, sorted by qualified name.
type view struct {
	entries []*host.Entry
	byKey   map[key]*host.Entry
	// admitted is the part of the registry the origins' filters admit,
	// declined skills included, as the registry names it: the names
	// are qualified over it (a filtered skill takes no name, so that no
	// answer suggests a skill the gateway does not serve) and, with
	// Options.Visible, over the part of it each caller sees.
	admitted []*host.Entry
	// names are the names entries carry: over admitted, or in a
	// caller's view over what the caller sees (see viewOf).
	names *host.Names
	idx   *searchIndex // the caller's search index; guarded by idxMu
	sig   string
	gen   uint64
}

// New builds a host from origins and hostOpts and a gateway over it. The
// gateway chains hostOpts.OnChange; hostOpts.Approver decides loads (wrap
// a policy around an [Elicitation] to ask the connected client). Call
// [Gateway.Start] or [Gateway.Run] to connect to the origins.
func New(origins []host.Origin, hostOpts *host.Options, opts *Options) (*Gateway, error) {
	g := &Gateway{ready: make(chan struct{}), toolDefs: map[string]string{}, prompts: map[string]string{},
		windows: map[key]*window{}, bodies: map[key]string{}}
	if opts != nil {
		g.opts = *opts
	}
	o := &g.opts
	if o.Implementation == nil {
		o.Implementation = &mcp.Implementation{Name: "skillport-gateway", Version: "dev"}
	}
	if o.TokenBudget <= 0 {
		o.TokenBudget = DefaultTokenBudget
	}
	if o.EnumLimit == 0 {
		o.EnumLimit = DefaultEnumLimit
	}
	if o.StartupWait <= 0 {
		o.StartupWait = DefaultStartupWait
	}
	if o.UpdateDelay <= 0 {
		o.UpdateDelay = DefaultUpdateDelay
	}
	g.log = o.Logger
	if g.log == nil {
		g.log = slog.Default()
	}
	var ho host.Options
	if hostOpts != nil {
		ho = *hostOpts
	}
	if ho.Logger == nil {
		ho.Logger = g.log
	}
	chained := ho.OnChange
	ho.OnChange = func() {
		if chained != nil {
			chained()
		}
		g.changed()
	}
	// An origin whose include list is empty contributes nothing; leaving it
	// out of the host also keeps its skills from qualifying others' names.
	var kept []host.Origin
	for _, og := range origins {
		if f := o.Filters[og.Label]; f != nil && f.Include != nil && len(f.Include) == 0 {
			g.log.Info("gateway: origin left out: its include list is empty", "origin", og.Label)
			continue
		}
		kept = append(kept, og)
	}
	h, err := host.New(kept, &ho)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.h = h
	g.view.Store(&view{byKey: map[key]*host.Entry{}})
	g.src = newSource(g)
	g.srv = mcp.NewServer(o.Implementation, &mcp.ServerOptions{
		Logger: sdklog.Quiet(g.log),
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			if g.published(ctx, req).File(req.Params.URI) == nil {
				return fmt.Errorf("cannot subscribe to %q: the gateway publishes no file at that URI", req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		SetCacheable:       g.setCacheable,
	})
	// Instructions are set before the extension decorates the handshake
	// result (it may wrap it in a type of its own).
	g.srv.AddReceivingMiddleware(g.instructionsMiddleware)
	g.srv.AddSendingMiddleware(holdUntilInitialized)
	// Only the standard extension: the gateway re-publishes what it has
	// verified, in the one design whose integrity rules it applies.
	var pub published.Source = g.src
	if o.Visible != nil {
		g.pub = access.Filter(g.src, o.Visible)
		pub = g.pub
		g.srv.AddReceivingMiddleware(g.promptsMiddleware)
		g.callers = published.NewSessionCallers(g.srv)
		g.srv.AddSendingMiddleware(g.callers.Hold(promptsListChanged))
	}
	g.ext, err = skillserver.Attach(g.srv, pub, &skillserver.Options{OmitInstructions: true, Logger: g.log, CacheScope: "private", TTL: -1,
		Profiles: []skillserver.Profile{skillserver.ProfileSEP2640}})
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// Added last, so it is outermost: every handler, the skills extension's
	// included, sees the session in its context (for elicitation).
	g.srv.AddReceivingMiddleware(g.middleware)
	return g, nil
}

// setCacheable marks private, with Options.Visible, every cacheable
// result whose content depends on the caller: the instructions' catalog
// (server/discover), the prompts and the re-published resources. go-sdk
// would mark them public, letting a shared cache show one caller's skills
// to another. tools/list is one definition for every caller.
func (g *Gateway) setCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	if g.opts.Visible == nil {
		return
	}
	if _, ok := req.(*mcp.ListToolsRequest); !ok {
		c.CacheScope = wire.CacheScopePrivate
	}
}

// Open builds a gateway from a parsed gateway.json: the origins, filters,
// token budget and search settings, and the approval chain deny rules →
// allow rules → elicitation (when enabled and the client supports it) →
// refusal, with approvals persisted in the configured store.
func Open(cfg *Config, opts *Options) (*Gateway, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Filters = cfg.Filters
	o.IndexBodies = o.IndexBodies || cfg.IndexBodies
	if o.TokenBudget == 0 {
		o.TokenBudget = cfg.TokenBudget
	}
	if o.StartupWait == 0 {
		o.StartupWait = cfg.StartupWait
	}
	storePath := ""
	if cfg.Approvals.Store == nil {
		p, err := approval.DefaultPath()
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		storePath = p
	} else {
		storePath = *cfg.Approvals.Store
	}
	store, err := approval.Open(storePath)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	var fallback approval.Approver = approval.Deny{}
	if cfg.Approvals.ElicitEnabled() {
		fallback = &Elicitation{Fallback: approval.Deny{}}
	}
	policy := &approval.Policy{Allow: cfg.Approvals.Allow, Deny: cfg.Approvals.Deny, Fallback: fallback}
	if o.ApproveHint == "" {
		o.ApproveHint = approveHint(cfg.Path, cfg.Approvals.ElicitEnabled())
	}
	// Upstreams see the gateway's own version as clientInfo.
	clientInfo := &mcp.Implementation{Name: "skillport-gateway", Version: "dev"}
	if o.Implementation != nil && o.Implementation.Version != "" {
		clientInfo.Version = o.Implementation.Version
	}
	ho := &host.Options{
		ClientInfo:   clientInfo,
		CallTimeout:  cfg.CallTimeout,
		AllowDynamic: cfg.AllowDynamic,
		Approver:     policy,
		Approvals:    store,
		Logger:       o.Logger,
		OpenGit:      gitorigin.Opener(&gitorigin.Options{Logger: o.Logger}),
		Trust:        o.Trust,
		OpenOCI:      gitorigin.OCIOpener(&gitorigin.Options{Logger: o.Logger}),
	}
	if cfg.Cache {
		dir, err := cache.DefaultDir()
		if err == nil {
			ho.Cache, err = cache.New(dir)
		}
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	return New(cfg.Origins, ho, &o)
}

func approveHint(cfgPath string, elicit bool) string {
	s := "To approve it, the user can add {\"origin\": \"%[1]s\", \"skill\": \"%[2]s\"} to \"approvals\".\"allow\""
	if cfgPath != "" {
		s += " in " + cfgPath
	} else {
		s += " in the gateway configuration"
	}
	s += " and restart the gateway"
	if elicit {
		s += ", or use an MCP client that supports elicitation, which is asked to approve each skill"
	}
	return s + "."
}

// Host returns the host the gateway re-exposes.
func (g *Gateway) Host() *host.Host { return g.h }

// Server returns the MCP server. Run it on any transport, or use
// [Gateway.Run] and [Gateway.Handler].
func (g *Gateway) Server() *mcp.Server { return g.srv }

// Start connects to the origins in the background and returns at once.
// Clients that initialize meanwhile wait up to Options.StartupWait for the
// listings; what arrives later is announced with list_changed.
func (g *Gateway) Start(ctx context.Context) {
	g.startOnce.Do(func() {
		g.started.Store(time.Now().UnixNano())
		ctx := context.WithoutCancel(ctx)
		go func() {
			g.h.Connect(ctx)
			g.update()
			close(g.ready)
		}()
		go g.reportPending(ctx)
	})
}

// reportPending logs, once StartupWait has passed, the origins that have
// not answered yet: they are still being connected in the background, and
// requests no longer wait for them.
func (g *Gateway) reportPending(ctx context.Context) {
	t := time.NewTimer(g.opts.StartupWait)
	defer t.Stop()
	select {
	case <-g.ready:
		return
	case <-ctx.Done():
		return
	case <-t.C:
	}
	for _, label := range g.pending() {
		g.log.Warn("gateway: origin has not answered yet; still connecting in the background, its skills will be announced with list_changed",
			"origin", label, "waited", g.opts.StartupWait)
	}
}

// pending are the origins still connecting or listing for the first time.
func (g *Gateway) pending() []string {
	var out []string
	for _, o := range g.h.Origins() {
		if o.Err == nil && o.Listed.IsZero() {
			out = append(out, o.Label)
		}
	}
	return out
}

// Ready is closed once every origin was connected and listed (or failed).
func (g *Gateway) Ready() <-chan struct{} { return g.ready }

// Run starts the gateway and serves one client on t (for example
// &mcp.StdioTransport{}) until the client disconnects or ctx ends.
func (g *Gateway) Run(ctx context.Context, t mcp.Transport) error {
	g.Start(ctx)
	return g.srv.Run(ctx, t)
}

// Handler returns the Streamable HTTP handler of the gateway, which serves
// every protocol revision on one endpoint as [skillserver.NewHTTPHandler] does
// for a skills server: the gateway is an MCP server like any other. Call
// [Gateway.Start] first, and Close the handler when the gateway stops.
func (g *Gateway) Handler(opts *skillserver.HTTPOptions) *HTTPHandler {
	return &HTTPHandler{HTTPHandler: skillserver.NewHTTPHandler(g.srv, opts), holds: &g.holds}
}

// Close disconnects from the origins.
func (g *Gateway) Close() error {
	g.timerMu.Lock()
	g.closed = true
	if g.timer != nil {
		g.timer.Stop()
	}
	g.timerMu.Unlock()
	g.ext.Close()
	return g.h.Close()
}

// HandshakeWait bounds how long initialize waits for the upstreams'
// first listings (StartupWait, when shorter, bounds it instead): long
// enough for local servers to answer, so that the instructions' catalog
// is complete, short enough that a hung upstream does not hold clients.
const HandshakeWait = time.Second

// waitReady waits for the first listing, at most StartupWait after Start.
func (g *Gateway) waitReady(ctx context.Context) { g.waitReadyFor(ctx, g.opts.StartupWait) }

// waitReadyFor waits for the first listing, at most d after Start.
func (g *Gateway) waitReadyFor(ctx context.Context, d time.Duration) {
	started := g.started.Load()
	if started == 0 {
		return
	}
	left := time.Until(time.Unix(0, started).Add(d))
	if left <= 0 {
		return
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-g.ready:
	case <-t.C:
	case <-ctx.Done():
	}
}

// middleware puts the session in the context of every request (for
// elicitation) and holds requests that arrive before the upstreams were
// listed (at most StartupWait after Start; clients of protocol 2026-07-28
// may call skills/list or tools/list without any handshake).
func (g *Gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			ctx = withSession(ctx, ss)
		}
		ctx = withCaller(ctx, req)
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && g.callers != nil {
			g.callers.See(ss, skillserver.CallerFromContext(ctx))
		}
		switch {
		case strings.HasPrefix(method, "notifications/") || method == "ping":
		case method == "initialize" || method == "server/discover":
			// The handshake waits at most HandshakeWait: one hung
			// upstream must not hold every client's initialize. Its
			// instructions say which origins are still being listed;
			// their skills arrive with list_changed.
			g.waitReadyFor(ctx, min(HandshakeWait, g.opts.StartupWait))
		default:
			g.waitReady(ctx)
		}
		return next(ctx, method, req)
	}
}

// instructionsMiddleware gives the handshake the current instructions.
func (g *Gateway) instructionsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Instructions = g.instructions(withCaller(ctx, req))
		case *mcp.DiscoverResult:
			r.Instructions = g.instructions(withCaller(ctx, req))
		}
		return res, err
	}
}

// changed is the host's OnChange: it schedules one update for a burst of
// changes. It never blocks.
func (g *Gateway) changed() {
	if g.srv == nil || g.started.Load() == 0 {
		return // still being built, or Start will update
	}
	g.timerMu.Lock()
	defer g.timerMu.Unlock()
	if g.closed {
		return
	}
	if g.timer == nil {
		g.timer = time.AfterFunc(g.opts.UpdateDelay, g.update)
	} else {
		g.timer.Reset(g.opts.UpdateDelay)
	}
}

// update recomputes what the gateway shows and, when it changed, updates
// tools, prompts and the re-published skills; go-sdk then sends
// notifications/{tools,prompts,resources}/list_changed (debounced).
func (g *Gateway) update() {
	g.updateMu.Lock()
	defer g.updateMu.Unlock()
	old := g.view.Load()
	v := g.computeView()
	if g.built.Load() && v.sig == old.sig {
		return
	}
	v.gen = old.gen + 1
	g.view.Store(v)
	g.built.Store(true)
	g.syncTools(v)
	if g.callers != nil {
		g.callers.Owe(func(c *skillserver.Caller) []string {
			if g.promptsSig(old, c) != g.promptsSig(v, c) {
				return []string{promptsListChanged}
			}
			return nil
		})
	}
	g.syncPrompts(v)
	g.src.update(v)
}

func (g *Gateway) computeView() *view {
	v := &view{byKey: map[key]*host.Entry{}}
	h := sha256.New()
	for _, e := range g.h.Skills() {
		// The filter sees the registry's names: a pattern on a qualified
		// name must not depend on what the filter itself leaves out.
		if g.opts.Filters[e.Origin].Admits(e.Name, e.Path, e.Qualified) {
			v.admitted = append(v.admitted, e)
		}
	}
	v.names = g.h.Qualify(v.admitted)
	for _, e := range v.names.Entries() {
		if e.Declined != nil {
			if g.opts.Visible != nil {
				// A declined skill still takes part in each caller's
				// names (as in the registry's).
				fmt.Fprintf(h, "-%s\x00%s\x00%s\x00%s\n", e.Origin, e.URI, e.Name, e.Path)
			}
			continue
		}
		v.entries = append(v.entries, e)
		v.byKey[keyOf(e)] = e
	}
	sort.Slice(v.entries, func(i, j int) bool { return v.entries[i].Qualified < v.entries[j].Qualified })
	for _, e := range v.entries {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%t\x00", e.Origin, e.URI, e.Qualified, e.Dynamic)
		h.Write(e.Frontmatter.JSON())
		for _, f := range e.Files {
			fmt.Fprintf(h, "\x00%s\x00%s\x00%d", f.URI, f.Digest, f.Size)
		}
		h.Write([]byte{'\n'})
	}
	v.sig = hex.EncodeToString(h.Sum(nil))
	return v
}

// visible resolves a name the model or client gave to a skill the gateway
// shows to the caller of ctx.
func (g *Gateway) visible(ctx context.Context, name string) (*host.Entry, error) {
	if name == "" {
		return nil, errors.New("no skill name given; pass a name from the skill catalog, or find one with search_skills")
	}
	if g.opts.Visible != nil {
		return g.visibleTo(ctx, name)
	}
	v := g.view.Load()
	if v.names == nil {
		return nil, fmt.Errorf("%w %q; find skills with search_skills", host.ErrUnknownSkill, name)
	}
	e, err := v.names.Lookup(name)
	if err != nil {
		if errors.Is(err, host.ErrUnknownSkill) {
			return nil, fmt.Errorf("%w; find skills with search_skills", err)
		}
		return nil, err
	}
	if _, ok := v.byKey[keyOf(e)]; !ok || !g.sees(ctx, e) {
		if ok || e.Declined == nil || !g.sees(ctx, e) {
			// Hidden from this caller: the words of an unknown name.
			return nil, fmt.Errorf("%w %q; find skills with search_skills", host.ErrUnknownSkill, name)
		}
		return nil, e.Declined
	}
	return e, nil
}

// window is a skill being acted on: loaded once, approval and verification
// included, and held while its entry stays the same.
type window struct {
	done chan struct{}
	l    *host.Loaded
	err  error
	sig  string
}

// contentSig identifies the exact content an entry describes.
func contentSig(e *host.Entry) string {
	if e.Dynamic {
		return "dynamic"
	}
	return approval.Key(e.Origin, e.URI, e.Files)
}

// load returns the acting window of e, loading the skill (approval,
// retrieval of SKILL.md, verification) unless a window for the same
// content is open. Concurrent loads of one skill share one approval.
func (g *Gateway) load(ctx context.Context, e *host.Entry) (*host.Loaded, error) {
	k, sig := keyOf(e), contentSig(e)
	for {
		g.winMu.Lock()
		w := g.windows[k]
		if w != nil {
			select {
			case <-w.done:
				if w.err == nil && w.sig == sig && !e.Dynamic {
					g.winMu.Unlock()
					return w.l, nil
				}
				if w.l != nil {
					w.l.Close()
				}
				w = nil
			default:
			}
		}
		if w != nil {
			g.winMu.Unlock()
			select {
			case <-w.done:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		w = &window{done: make(chan struct{}), sig: sig}
		g.windows[k] = w
		g.winMu.Unlock()

		w.l, w.err = g.h.Load(ctx, e)
		if w.err == nil {
			// The host may have refreshed a stale entry while loading.
			w.sig = contentSig(w.l.Entry)
			g.noteBody(w.l)
		}
		g.winMu.Lock()
		if w.err != nil && g.windows[k] == w {
			delete(g.windows, k)
		}
		g.winMu.Unlock()
		close(w.done)
		return w.l, w.err
	}
}

// active returns the open window of e, or why there is none: never loaded,
// or loaded under content that has since changed upstream.
func (g *Gateway) active(e *host.Entry) (*host.Loaded, error) {
	g.winMu.Lock()
	defer g.winMu.Unlock()
	w := g.windows[keyOf(e)]
	if w != nil {
		select {
		case <-w.done:
		default:
			w = nil
		}
	}
	if w == nil || w.err != nil {
		return nil, fmt.Errorf("%w: skill %s (origin %s) is not loaded; call %s(name=%q) first", host.ErrNotLoaded, e.Qualified, e.Origin, host.ToolReadSkill, e.Qualified)
	}
	if w.sig != contentSig(e) {
		return nil, fmt.Errorf("skill %s (origin %s) changed upstream since it was loaded; call %s(name=%q) again to review the new version", e.Qualified, e.Origin, host.ToolReadSkill, e.Qualified)
	}
	return w.l, nil
}
