// Package skillserver serves Agent Skills over MCP as the Skills Extension
// (io.modelcontextprotocol/skills, SEP-2640) specifies, on any go-sdk
// [mcp.Server].
//
// [Attach] adds skills to a server an application already has; [New]
// creates a server that serves only skills. Either way the server answers
// skills/list, skills/get, resources/directory/read, resources/list and
// resources/read from a [SkillSource]: anything that can list skills and
// read their files (a database that stores digests, a gateway
// re-publishing upstream skills), or a [*catalog.Catalog] through
// [NewCatalogSource].
//
// Every URI a client sends is looked up as an exact string in the current
// snapshot; nothing is ever joined to a filesystem path, so a URI reaches
// content only if the snapshot publishes it. Errors carry JSON-RPC codes
// (-32602 for anything not served, -32603 for internal failures), a message
// naming the URI and saying what to do, and data {"uri": ...}.
//
// The capability extensions["io.modelcontextprotocol/skills"] =
// {"directoryRead": true} and the resources capability are added to the
// initialize and server/discover results, and the server's instructions
// name what it serves. When the source changes, sessions receive
// notifications/resources/list_changed, and notifications/resources/updated
// for the URIs they subscribed to whose content changed.
package skillserver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/wire"
)

// Defaults for [Options].
const (
	DefaultPageSize = 100
	DefaultTTL      = time.Minute
)

// maxPageResources bounds the manifest entries on one skills/list page, so
// that a page of large skills stays a reasonable message; a page always
// holds at least one skill, whole.
const maxPageResources = 4096

// Options configure [Attach] and [New]. The zero value is usable.
type Options struct {
	// PageSize is the most items per page of skills/list, resources/list
	// and resources/directory/read; zero means DefaultPageSize.
	PageSize int
	// TTL is sent as ttlMs on skills/list, skills/get, resources/list and
	// resources/read results; zero means DefaultTTL, negative means 0.
	TTL time.Duration
	// CacheScope is sent as cacheScope: "public" (the default) or "private"
	// when what is served depends on the caller.
	CacheScope string
	// CursorKey authenticates list cursors. Replicas behind a load balancer
	// (stateless HTTP) must share it; nil means a random per-process key.
	CursorKey []byte
	// Instructions is added to the server's instructions; empty means a
	// sentence generated from the snapshot, naming what is served.
	Instructions string
	// OmitInstructions leaves the server's instructions untouched.
	OmitInstructions bool
	// Logger receives one line per internal error; nil means slog.Default().
	Logger *slog.Logger
	// Profiles are the wire designs served (see [Profile]); nil means
	// [DefaultProfiles]. This and the next three fields configure the
	// compatibility profiles (profile*.go), not the extension.
	Profiles []Profile
	// Scripts, when set, enables seed 001's skills/execute, which runs
	// scripts only through it. Leave it nil unless the operator asked for
	// script execution.
	Scripts ScriptRunner
	// ListChangedDelay coalesces the notifications/skills/list_changed sent
	// to clients of the legacy designs: one is sent at most this long after
	// the first of a burst of changes, so that a burst of edits costs one
	// re-listing. Zero means DefaultListChangedDelay.
	ListChangedDelay time.Duration
	// LegacyErrorCodes makes the seed-001 methods answer an unknown skill
	// with -32002 and an unknown reference with -32004, as that design
	// suggests, instead of -32602; -32002 is also the base protocol's legacy
	// "resource not found" code, hence off by default.
	LegacyErrorCodes bool
	// NoFastPath makes every request of a server created by [New] go
	// through go-sdk. By default resources/read, skills/get, skills/list
	// and resources/directory/read are answered by a thin read path of
	// [Server.HTTPHandler] and of the stdio transport ([Server.Transport]),
	// which sends the bytes go-sdk would, several times cheaper; receiving
	// middleware added to the server does not see them, so set this when
	// you add any.
	NoFastPath bool
	// OnSkillLoaded, when set, is told of each load of a skill: a
	// skills/get by uri, or a resources/read of a skill's SKILL.md,
	// answered with a result. It is called once per such answer, after
	// the result is made, on every path that answers (go-sdk's handlers
	// and the thin read path, over HTTP and stdio), with the request's
	// context ([CallerFromContext] names the caller) and the skill's
	// path. Errors, other files, skills the caller is not served and
	// skills/get by name are no loads. It runs on the request's
	// goroutine: it must be cheap and must not block (count, do not
	// write to a database).
	OnSkillLoaded func(ctx context.Context, skillPath string)
}

// Server is what [Attach] installed on an [mcp.Server]: the skills half of
// it. Its methods are safe for concurrent use.
type Server struct {
	mcp  *mcp.Server
	impl *mcp.Implementation // set by New: the thin read path names it
	fast atomic.Int64        // requests the thin read path answered
	// What the thin read path encodes once: the _meta head of 2026-07-28
	// results, and resources/read results of the current snapshot.
	metaHead atomic.Pointer[[]byte]
	reads    atomic.Pointer[readCache]
	pages    atomic.Pointer[pageCache] // skills/list pages of the current snapshot
	src      published.Source
	opts     Options
	key      []byte
	log      *slog.Logger

	schemes atomic.Pointer[[]string]
	cancel  func()

	mu   sync.Mutex
	subs map[string]int // subscribed URI -> number of subscriptions

	notify sync.Mutex // serialises resources/updated batches

	ext     bool   // the Skills Extension is served
	compat  compat // the compatibility profiles (hook.go); nil: none
	entries entriesCache

	viewSrc published.ViewSource      // set when what a session sees depends on its caller
	views   *published.SessionCallers // those sessions' callers and owed notifications
}

// Attach makes s serve the skills of src, alongside whatever else s serves.
// Call it once per MCP server, before the server is connected.
// Resources s already has keep working: resources/list returns them first,
// then the skill files, and resources/read passes URIs that src does not
// publish (and whose scheme is not a skill scheme) on to s.
//
// Delivering notifications/resources/updated needs s to accept
// resources/subscribe, which go-sdk allows only when the server was created
// with ServerOptions.SubscribeHandler set; [New] sets it.
func Attach(s *mcp.Server, skills SkillSource, opts *Options) (*Server, error) {
	if s == nil || skills == nil {
		return nil, errors.New("server: Attach needs an MCP server and a source")
	}
	// The sources of this module hand out snapshots themselves; the server
	// answers from those (and caches their encodings) as they are.
	src, ok := skills.(published.Source)
	if !ok {
		src = fromSkills(skills)
	}
	srv := &Server{mcp: s, src: src, subs: map[string]int{}}
	if opts != nil {
		srv.opts = *opts
	}
	o := &srv.opts
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.TTL < 0 {
		o.TTL = 0
	}
	switch o.CacheScope {
	case "":
		o.CacheScope = wire.CacheScopePublic
	case wire.CacheScopePublic, wire.CacheScopePrivate:
	default:
		return nil, fmt.Errorf("server: CacheScope %q: use %q or %q", o.CacheScope, wire.CacheScopePublic, wire.CacheScopePrivate)
	}
	srv.key = o.CursorKey
	if len(srv.key) == 0 {
		srv.key = make([]byte, 32)
		rand.Read(srv.key)
	}
	srv.log = o.Logger
	if srv.log == nil {
		srv.log = slog.Default()
	}
	if err := srv.setCompat(); err != nil {
		return nil, err
	}
	if err := srv.register(); err != nil {
		return nil, err
	}
	if vs, ok := src.(published.ViewSource); ok {
		srv.viewSrc = vs
		srv.views = published.NewSessionCallers(s)
		s.AddSendingMiddleware(srv.views.Hold(notifyListChanged, notifyUpdated))
	}
	srv.setSchemes(src.Snapshot())
	srv.cancel = src.OnChange(srv.changed)
	return srv, nil
}

// New returns an MCP server that serves the skills of src and nothing else,
// with resource subscriptions enabled. impl names the server; nil means
// {"name": "skillport"}.
func New(impl *mcp.Implementation, src SkillSource, opts *Options) (*mcp.Server, *Server, error) {
	if impl == nil {
		impl = &mcp.Implementation{Name: "skillport"}
	}
	var srv *Server
	accept := func(ctx context.Context, req *mcp.SubscribeRequest) error {
		// Only published files can change under a client's feet, and only
		// those the caller sees: a hidden file is refused as an absent one.
		if srv == nil {
			return nil
		}
		snap, err := srv.snapshot(withCaller(ctx, req))
		if err != nil {
			return err
		}
		if snap.File(req.Params.URI) == nil {
			return invalidParams(req.Params.URI, "cannot subscribe to %s: no file is served at that URI%s", show(req.Params.URI), because(req.Params.URI, srv.schemeList()))
		}
		return nil
	}
	s := mcp.NewServer(impl, &mcp.ServerOptions{
		// go-sdk answers tools/list and prompts/list (with an empty list
		// and caching hints) whether or not any are registered, so both are
		// declared: a client must find served what is advertised, and
		// advertised what is served.
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{},
			Prompts:   &mcp.PromptCapabilities{},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
		SubscribeHandler:   accept,
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	srv, err := Attach(s, src, opts)
	if err != nil {
		return nil, nil, err
	}
	if !srv.opts.NoFastPath {
		// Only New's servers: a receiving middleware an application adds
		// to a server of its own ([Attach]) would not see the requests the
		// thin path answers.
		srv.impl = impl
	}
	return s, srv, nil
}

// thin reports whether the thin read path may answer for srv.
func (srv *Server) thin() bool { return srv.impl != nil }

// Close stops following the source; the MCP server keeps answering from
// the last snapshot.
func (srv *Server) Close() error {
	if srv.cancel != nil {
		srv.cancel()
	}
	return nil
}

// Source returns the source the server answers from.
func (srv *Server) Source() SkillSource { return srv.src }

// register installs the method handlers. Every method the extension
// answers is dispatched from here and from the receiving middleware below,
// so that one place knows them all; the compatibility profiles add theirs
// through their hook (hook.go).
func (srv *Server) register() error {
	s := srv.mcp
	// skills/list and skills/get are shared with the profiles, which are
	// asked first (listAny, getAny).
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodListSkills, func(ctx context.Context, ss *mcp.ServerSession, p *wire.ListSkillsParams) (*listResponse, error) {
		if p == nil {
			p = &wire.ListSkillsParams{}
		}
		return srv.listAny(ctx, sessionInit(ss), p)
	}); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodGetSkill, func(ctx context.Context, _ *mcp.ServerSession, p *wire.GetParams) (*getResponse, error) {
		res, err := srv.getAny(ctx, p)
		if err == nil {
			srv.loaded(ctx, res.loaded)
		}
		return res, err
	}); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if srv.compat != nil {
		if err := srv.compat.register(); err != nil {
			return err
		}
	}
	if !srv.ext {
		s.AddReceivingMiddleware(srv.middleware)
		srv.addTemplates(srv.src.Snapshot())
		return nil
	}
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodReadDirectory, func(ctx context.Context, _ *mcp.ServerSession, p *wire.ReadDirectoryParams) (*wire.ReadDirectoryResult, error) {
		if p == nil {
			return nil, invalidParams("", "resources/directory/read needs params {\"uri\": <directory URI>}")
		}
		return srv.readDirectory(ctx, p)
	}); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.AddReceivingMiddleware(srv.middleware)
	srv.addTemplates(srv.src.Snapshot())
	return nil
}

// middleware answers the base methods that involve skill files, and
// decorates the handshake with the capability and instructions.
func (srv *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = withCaller(ctx, req)
		if srv.viewSrc != nil {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				srv.views.See(ss, CallerFromContext(ctx))
			}
		}
		switch method {
		case "resources/read":
			if r, ok := req.(*mcp.ReadResourceRequest); ok && r.Params != nil {
				return srv.readResource(ctx, r, next)
			}
		case "resources/list":
			if r, ok := req.(*mcp.ListResourcesRequest); ok {
				return srv.listResources(ctx, r, next)
			}
		case "initialize":
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.InitializeResult); ok && err == nil {
				r.Capabilities = srv.capabilities(r.Capabilities)
				if cannotPush(ctx) {
					withoutPush(r.Capabilities)
				}
				r.Instructions = srv.instructions(r.Instructions)
				return srv.decorate(r), nil
			}
			return res, err
		case "server/discover":
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.DiscoverResult); ok && err == nil {
				r.Capabilities = srv.capabilities(r.Capabilities)
				r.Instructions = srv.instructions(r.Instructions)
				return srv.decorate(r), nil
			}
			return res, err
		case "resources/subscribe":
			if cannotPush(ctx) {
				// Not advertised to this client: a stateless server cannot
				// reach a client of a revision before 2026-07-28 later.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "resources/subscribe is not served to clients of a stateless server"}
			}
			res, err := next(ctx, method, req)
			if r, ok := req.(*mcp.SubscribeRequest); ok && err == nil && r.Params != nil {
				srv.subscribe(r.Params.URI, 1)
			}
			return res, err
		case "resources/unsubscribe":
			res, err := next(ctx, method, req)
			if r, ok := req.(*mcp.UnsubscribeRequest); ok && err == nil && r.Params != nil {
				srv.subscribe(r.Params.URI, -1)
			}
			return res, err
		case "subscriptions/listen":
			r, ok := req.(*mcp.SubscriptionsListenRequest)
			if !ok || r.Params == nil || r.Params.Notifications == nil {
				break
			}
			uris := slices.Clone(r.Params.Notifications.ResourceSubscriptions)
			for _, u := range uris {
				srv.subscribe(u, 1)
			}
			defer func() {
				for _, u := range uris {
					srv.subscribe(u, -1)
				}
			}()
		}
		return next(ctx, method, req)
	}
}

// withoutPush clears the capabilities that promise notifications, for a
// client that no notification can reach.
func withoutPush(c *mcp.ServerCapabilities) {
	if c.Tools != nil {
		c.Tools.ListChanged = false
	}
	if c.Prompts != nil {
		c.Prompts.ListChanged = false
	}
	if c.Resources != nil {
		c.Resources.ListChanged, c.Resources.Subscribe = false, false
	}
}

// capabilities adds the extension and the resources capability.
func (srv *Server) capabilities(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	if c == nil {
		c = &mcp.ServerCapabilities{}
	}
	if srv.ext {
		c.AddExtension(wire.ExtensionID, map[string]any{"directoryRead": true})
	}
	if srv.compat != nil {
		srv.compat.capabilities(c)
	}
	if c.Resources == nil {
		c.Resources = &mcp.ResourceCapabilities{ListChanged: true}
	}
	return c
}

// instructions appends what this server serves to the server's own instructions.
func (srv *Server) instructions(own string) string {
	if srv.opts.OmitInstructions {
		return own
	}
	text := srv.opts.Instructions
	if text == "" {
		text = describe(srv.src.Snapshot(), srv.howToRead())
	}
	if own == "" {
		return text
	}
	return own + "\n\n" + text
}

// describe names what a snapshot serves in one or two sentences, and how
// to read it (how) in the designs this server speaks: a client must not be
// told about methods the operator turned off.
func describe(snap published.Snapshot, how reading) string {
	skills := snap.Skills()
	if len(skills) == 0 {
		return "This server serves Agent Skills " + how.over + " but currently serves none."
	}
	const show = 12
	var names []string
	for i, sk := range skills {
		if i == show {
			names = append(names, fmt.Sprintf("and %d more", len(skills)-show))
			break
		}
		names = append(names, sk.Path)
	}
	noun := "skills"
	if len(skills) == 1 {
		noun = "skill"
	}
	return fmt.Sprintf("This server serves %d Agent %s %s: %s. %s",
		len(skills), noun, how.over, strings.Join(names, ", "), how.read)
}

// reading says, for instructions, which wire design a client should use.
type reading struct{ over, read string }

func (srv *Server) subscribe(uri string, delta int) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	n := srv.subs[uri] + delta
	if n <= 0 {
		delete(srv.subs, uri)
		return
	}
	srv.subs[uri] = n
}

// changed runs when the source swaps snapshots: list_changed for everyone,
// resources/updated for subscribed URIs whose content changed or vanished.
func (srv *Server) changed(old, snap published.Snapshot) {
	srv.setSchemes(snap)
	if srv.compat != nil {
		srv.compat.changed()
	}
	// Re-registering the templates is how go-sdk is asked to send
	// notifications/resources/list_changed (debounced) to every session,
	// legacy sessions and subscriptions/listen streams alike.
	srv.addTemplates(snap)

	srv.mu.Lock()
	var updated []string
	for uri := range srv.subs {
		if srv.viewSrc != nil || fileChanged(old, snap, uri) {
			updated = append(updated, uri)
		}
	}
	srv.mu.Unlock()
	if srv.viewSrc != nil {
		// Each caller is told about what changed in its own view only;
		// the sending middleware holds back the rest.
		updated = srv.owe(srv.viewSrc, old, snap, updated)
	}
	if len(updated) == 0 {
		return
	}
	slices.Sort(updated)
	// Sent from another goroutine: a client that does not read its
	// connection must not hold up the reload that swapped snapshots.
	go func() {
		srv.notify.Lock()
		defer srv.notify.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, uri := range updated {
			if err := srv.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				srv.log.Warn("cannot send notifications/resources/updated", "uri", uri, "err", err)
			}
		}
	}()
}

// schemesOf returns the URI schemes a snapshot publishes ("skill" at least).
func schemesOf(snap published.Snapshot) []string {
	out := []string{"skill"}
	for _, sk := range snap.Skills() {
		if s, _, ok := strings.Cut(sk.URI, "://"); ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (srv *Server) setSchemes(snap published.Snapshot) {
	s := schemesOf(snap)
	srv.schemes.Store(&s)
}

func (srv *Server) schemeList() []string { return *srv.schemes.Load() }

// owns reports whether uri is in a namespace this server answers for.
func (srv *Server) owns(uri string) bool {
	for _, s := range srv.schemeList() {
		if len(uri) > len(s)+3 && uri[:len(s)] == s && uri[len(s):len(s)+3] == "://" {
			return true
		}
	}
	return false
}

// addTemplates advertises the skill namespaces in resources/templates/list.
// Reads never reach go-sdk's template matching: the middleware answers
// every URI of these schemes from the snapshot.
func (srv *Server) addTemplates(snap published.Snapshot) {
	for _, s := range schemesOf(snap) {
		srv.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
			Name:        "skill-files",
			Title:       "Agent Skill files",
			URITemplate: s + "://{+path}",
			Description: "Files of the Agent Skills this server serves (SKILL.md and supporting files). " +
				"Enumerate skills with skills/list; each entry lists every file with its digest and size.",
		}, srv.templateRead)
	}
}

// templateRead is only reached if another middleware bypasses ours.
func (srv *Server) templateRead(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	res, err := srv.read(ctx, req.Params.URI)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: res.Contents, Cacheable: mcp.Cacheable{TTLMs: int(res.TTLMs), CacheScope: res.CacheScope}}, nil
}
