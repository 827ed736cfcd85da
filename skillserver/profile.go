package skillserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/sandbox"
	"github.com/skillport/skillport/wire"
)

// Profile names a wire design the server answers in. SEP-2640 (the Skills
// Extension) is the standard; the others are compatibility profiles for
// clients written against earlier designs. They share one snapshot and one
// publication policy: a skill the extension would not publish is served by
// no profile.
type Profile string

// ProfileSEP2640 is the Skills Extension: skills/list and skills/get by
// uri, resources/directory/read, extensions["io.modelcontextprotocol/skills"].
// The compatibility profiles are named in their files (profile_*.go). See
// docs/profiles.md for the dispatch table.
const ProfileSEP2640 Profile = "sep2640"

// registered are the compatibility profiles this build has, in
// documentation order. Each profile's file registers itself in its init
// (and carries a build tag, skillport_no_<name>, that leaves it out), so
// removing a profile is deleting its files: see docs/profiles.md,
// "Removing a profile", and TestProfilesRemovable.
var registered []registration

type registration struct {
	rank int // documentation order: index 1, sep2076 2, seed001 3
	name Profile
	part func(*profileSet) part
}

// register adds a profile, from its file's init; DefaultProfiles and
// AllProfiles follow, complete before any code outside the package's
// initialization can read them.
func register(r registration) {
	i, _ := slices.BinarySearchFunc(registered, r.rank, func(a registration, rank int) int { return a.rank - rank })
	registered = slices.Insert(registered, i, r)
	DefaultProfiles = []Profile{ProfileSEP2640}
	for _, r := range registered {
		DefaultProfiles = append(DefaultProfiles, r.name)
	}
	AllProfiles = DefaultProfiles
}

// DefaultProfiles are served when [Options.Profiles] is nil: every profile,
// since none of them changes what a SEP-2640 client sees beyond fields and
// capability keys it ignores. skills/execute additionally needs
// [Options.Scripts].
var DefaultProfiles = []Profile{ProfileSEP2640}

// AllProfiles lists every profile, in documentation order.
var AllProfiles = DefaultProfiles

// ScriptRunner, the type of [Options.Scripts], belongs to the seed001
// profile (profile_seed001.go): it runs one script of a skill in a
// sandbox; [*sandbox.Runner] is the implementation. The server never runs
// a script any other way.
type ScriptRunner interface {
	Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error)
}

// ErrUnknownProfile is returned for a profile name the server does not know.
var ErrUnknownProfile = errors.New("unknown profile")

// ParseProfiles parses a comma-separated list such as "sep2640,index".
func ParseProfiles(s string) ([]Profile, error) {
	var out []Profile
	for part := range strings.SplitSeq(s, ",") {
		p := Profile(strings.TrimSpace(part))
		if p == "" {
			continue
		}
		if !slices.Contains(AllProfiles, p) {
			return nil, fmt.Errorf("server: %w %q: use a comma-separated list of %s", ErrUnknownProfile, p, profileNames())
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("server: no profile in %q: name at least one of %s", s, profileNames())
	}
	return out, nil
}

func profileNames() string {
	names := make([]string, len(AllProfiles))
	for i, p := range AllProfiles {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// profileSet is the compatibility profiles a server serves: the [compat]
// hook of the core (hook.go), registered by the init below. It calls the
// parts of the served profiles, and answers for the legacy ones together
// what they share: the superset skills/list entries, the top-level
// "skills" capability, notifications/skills/list_changed and the by-name
// lookups (this file and profile_notify.go).
type profileSet struct {
	srv    *Server
	parts  []part
	legacy bool // a served profile is a legacy one

	conns connSet
	// supersets holds the first superset skills/list page of the current
	// snapshot.
	supersets atomic.Pointer[pageCache]
	// state is what the profiles keep per server, each value under a key
	// type of its own ([kept]): the names index of the by-name methods,
	// SEP-2076's dependency diagnostics.
	state sync.Map
}

// part is one compatibility profile's share of the hook. A part embeds
// noPart and overrides what it adds.
type part interface {
	// legacy reports whether the profile is one of the pre-extension
	// skills primitive (SEP-2076, seed 001).
	legacy() bool
	// runsScripts reports whether the profile runs Options.Scripts.
	runsScripts() bool
	// register adds the profile's methods.
	register() error
	// getByName answers skills/get {name}; false: not this profile's.
	getByName(ctx context.Context, name string, args json.RawMessage) (*getResponse, bool, error)
	// checkURI refuses a skills/get uri (uri: p.URI, "" when absent) the
	// profile gives a meaning of its own.
	checkURI(uri string, absent bool) error
	// entry returns e, a superset skills/list entry of sk, with the
	// profile's fields added (by value: a pointer would move every entry
	// to the heap).
	entry(sk *catalog.Skill, e wire.ListEntry) wire.ListEntry
	// capability adds to the legacy "skills" capability.
	capability(c *wire.LegacyCapability)
	// capabilities adds to the server's capabilities.
	capabilities(c *mcp.ServerCapabilities)
	// resource, resources and read are the profile's own resources.
	resource(uri string) bool
	resources() []*mcp.Resource
	read(ctx context.Context, uri string) (*ReadResourceResult, error)
	// reading is how to read the skills through the profile; of the
	// served profiles, the highest rank is named in the instructions.
	reading() (r reading, rank int)
}

// noPart adds nothing.
type noPart struct{}

func (noPart) legacy() bool      { return false }
func (noPart) runsScripts() bool { return false }
func (noPart) register() error   { return nil }
func (noPart) getByName(context.Context, string, json.RawMessage) (*getResponse, bool, error) {
	return nil, false, nil
}
func (noPart) checkURI(string, bool) error                             { return nil }
func (noPart) entry(_ *catalog.Skill, e wire.ListEntry) wire.ListEntry { return e }
func (noPart) capability(*wire.LegacyCapability)                       {}
func (noPart) capabilities(*mcp.ServerCapabilities)                    {}
func (noPart) resource(string) bool                                    { return false }
func (noPart) resources() []*mcp.Resource                              { return nil }
func (noPart) reading() (reading, int)                                 { return reading{}, 0 }
func (noPart) read(context.Context, string) (*ReadResourceResult, error) {
	return nil, internalError("", "no profile serves this resource")
}

func init() { newCompat = newProfileSet }

// profiles returns the server's profile set; a server without one (the
// hook unregistered) has an empty set.
func (srv *Server) profiles() *profileSet {
	if p, ok := srv.compat.(*profileSet); ok {
		return p
	}
	return &profileSet{srv: srv}
}

func newProfileSet(srv *Server) (compat, bool, error) {
	list := srv.opts.Profiles
	if list == nil {
		list = DefaultProfiles
	}
	if len(list) == 0 {
		return nil, false, errors.New("server: Options.Profiles is empty; leave it nil for the defaults or name at least one profile")
	}
	ps, ext := &profileSet{srv: srv}, false
	for i, name := range list {
		if name == ProfileSEP2640 {
			ext = true
			continue
		}
		j := slices.IndexFunc(registered, func(r registration) bool { return r.name == name })
		if j < 0 {
			return nil, false, fmt.Errorf("server: Options.Profiles: %w %q: use %s", ErrUnknownProfile, name, profileNames())
		}
		if slices.Index(list, name) < i {
			continue // named twice
		}
		pt := registered[j].part(ps)
		ps.parts = append(ps.parts, pt)
		ps.legacy = ps.legacy || pt.legacy()
	}
	if srv.opts.Scripts != nil && !slices.ContainsFunc(ps.parts, part.runsScripts) {
		return nil, false, errors.New("server: Options.Scripts is set but the seed001 profile, which defines skills/execute, is not served")
	}
	return ps, ext, nil
}

// register installs the methods only the profiles define.
func (ps *profileSet) register() error {
	for _, pt := range ps.parts {
		if err := pt.register(); err != nil {
			return err
		}
	}
	return nil
}

// lacksExtension reports whether the client is known not to have
// declared the Skills Extension: its capabilities are known (in the
// request's own _meta, else from the session's initialize) and do not name
// it. A request that shows no capabilities at all, such as an older
// revision's request to a stateless server (go-sdk then makes up
// initialize params without capabilities), may come from a client that
// declared the extension at an initialize this server never connected to
// the request: it is not known to lack it.
func lacksExtension(init *mcp.InitializeParams, meta mcp.Meta) bool {
	declared, known := extensionKnown(init, meta)
	return known && !declared
}

// list answers skills/list for every profile at once. The SEP-2640
// entries, identical to skills/get's, are the default, left to the core;
// the superset (SEP-2076's name, description and fields, which SEP-2640
// readers ignore) goes only to a client known to lack the extension. init
// is the session's initialize params ([sessionInit]), or what the thin
// read path knows to be the same.
func (ps *profileSet) list(ctx context.Context, init *mcp.InitializeParams, p *wire.ListSkillsParams) (*listResponse, bool, error) {
	srv := ps.srv
	if srv.ext && (!ps.legacy || !lacksExtension(init, p.Meta)) {
		return nil, false, nil
	}
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return nil, true, err
	}
	if p.Cursor == "" {
		if page := ps.supersetFirst(snap); page != nil {
			return &listResponse{page: page}, true, nil
		}
	}
	stable, err := srv.listSkillsIn(snap, p)
	if err != nil {
		return nil, true, err
	}
	res := &wire.ListResult{Skills: make([]wire.ListEntry, 0, len(stable.Skills)), NextCursor: stable.NextCursor}
	if srv.ext {
		ttl := stable.TTLMs
		res.ResultType, res.TTLMs, res.CacheScope = stable.ResultType, &ttl, stable.CacheScope
	}
	for _, e := range stable.Skills {
		var le wire.ListEntry
		if srv.ext {
			res := e.Resources
			le.URI, le.Frontmatter, le.Resources, le.Meta = e.URI, e.Frontmatter.JSON(), res, e.Meta
		}
		if sk := snap.Skill(e.URI); sk != nil {
			le.Name, le.Description = sk.Name, sk.Frontmatter.Description()
			for _, pt := range ps.parts {
				le = pt.entry(sk, le)
			}
		}
		res.Skills = append(res.Skills, le)
	}
	if p.Cursor == "" {
		r, err := ps.keepSupersetFirst(snap, &listResponse{res: res})
		return r, true, err
	}
	return &listResponse{res: res}, true, nil
}

// supersetFirst returns the encoded first skills/list page of legacy
// (SEP-2076 superset) entries of snap, as [listResponse.MarshalJSON]
// writes it without _meta, when it is kept; nil otherwise. The superset
// goes to every client that does not declare the extension (go-sdk's
// default client among them) and its first page is what nearly all of
// them ask for: encoding it on each request was most of what such a
// skills/list cost.
func (ps *profileSet) supersetFirst(snap published.Snapshot) []byte {
	c := ps.supersets.Load()
	if c == nil || c.snap != snap.ID() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[pageKey{owner: cursorOwner(snap)}]
}

// keepSupersetFirst encodes res, the first superset page of snap, keeps
// it for [profileSet.supersetFirst] and returns it as a response of encoded
// bytes, so that this request is answered from the same bytes as the next.
func (ps *profileSet) keepSupersetFirst(snap published.Snapshot, res *listResponse) (*listResponse, error) {
	b, err := res.MarshalJSON()
	if err != nil {
		return nil, err
	}
	c := ps.supersets.Load()
	if c == nil || c.snap != snap.ID() {
		c = &pageCache{snap: snap.ID(), m: map[pageKey][]byte{}}
		ps.supersets.Store(c)
	}
	key := pageKey{owner: cursorOwner(snap)}
	c.mu.Lock()
	if _, ok := c.m[key]; !ok && c.size+len(b) <= maxPageCache {
		c.m[key] = b
		c.size += len(b)
	}
	c.mu.Unlock()
	return &listResponse{page: b}, nil
}

// get dispatches skills/get on its parameters: uri is SEP-2640, left to
// the core unless a profile gives that uri a meaning of its own; name is a
// profile's (SEP-2076); both is an error.
func (ps *profileSet) get(ctx context.Context, p *wire.GetParams) (*getResponse, bool, error) {
	srv := ps.srv
	switch {
	case p.URI != nil && p.Name != nil:
		return nil, true, invalidParams(*p.URI, "skills/get: pass uri (Skills Extension) or name (SEP-2076), not both")
	case p.Name != nil:
		for _, pt := range ps.parts {
			if res, ok, err := pt.getByName(ctx, *p.Name, p.Arguments); ok {
				return res, true, err
			}
		}
		return nil, true, nameError(*p.Name, "skills/get by name (SEP-2076) is not served here; pass the uri of a skills/list entry")
	}
	uri := ""
	if p.URI != nil {
		uri = *p.URI
	}
	if !srv.ext {
		return nil, true, invalidParams(uri, "skills/get by uri (Skills Extension) is not served here; pass {\"name\": <skill name>}")
	}
	for _, pt := range ps.parts {
		if err := pt.checkURI(uri, p.URI == nil); err != nil {
			return nil, true, err
		}
	}
	return nil, false, nil
}

// watches: a skills/list from a client that did not declare the extension
// is a legacy client's, which the connection's wrapper must see
// (profile_notify.go).
func (ps *profileSet) watches(method string, declared bool) bool {
	return method == wire.MethodListSkills && !declared && ps.legacy
}

// reading picks the served profile a client is likeliest to speak.
func (ps *profileSet) reading() reading {
	var best reading
	top := 0
	for _, pt := range ps.parts {
		if r, rank := pt.reading(); rank > top {
			best, top = r, rank
		}
	}
	return best
}

// decorate wraps an initialize or server/discover result so that it
// carries the legacy capability when a legacy profile is served.
func (ps *profileSet) decorate(res mcp.Result) mcp.Result {
	if !ps.legacy {
		return res
	}
	c := wire.LegacyCapability{ListChanged: true}
	for _, pt := range ps.parts {
		pt.capability(&c)
	}
	switch r := res.(type) {
	case *mcp.InitializeResult:
		return &initializeResult{InitializeResult: r, skills: c}
	case *mcp.DiscoverResult:
		return &discoverResult{DiscoverResult: r, skills: c}
	}
	return res
}

func (ps *profileSet) capabilities(c *mcp.ServerCapabilities) {
	for _, pt := range ps.parts {
		pt.capabilities(c)
	}
}

func (ps *profileSet) resource(uri string) bool {
	for _, pt := range ps.parts {
		if pt.resource(uri) {
			return true
		}
	}
	return false
}

func (ps *profileSet) resources() []*mcp.Resource {
	var out []*mcp.Resource
	for _, pt := range ps.parts {
		out = append(out, pt.resources()...)
	}
	return out
}

func (ps *profileSet) read(ctx context.Context, uri string) (*ReadResourceResult, error) {
	for _, pt := range ps.parts {
		if pt.resource(uri) {
			return pt.read(ctx, uri)
		}
	}
	return nil, internalError(uri, "no profile serves %s", uri)
}

// nameError is the -32602 error of the by-name methods, with data {"name"}.
func nameError(name, format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...), Data: nameData(name, nil)}
}

func nameData(name string, extra map[string]any) json.RawMessage {
	if len(name) > 256 {
		name = name[:256]
	}
	d := map[string]any{"name": name}
	for k, v := range extra {
		d[k] = v
	}
	b, _ := json.Marshal(d)
	return b
}

// initializeResult and discoverResult add the top-level "skills" capability
// of SEP-2076 and seed 001, which go-sdk's ServerCapabilities has no field
// for. Embedding the go-sdk result keeps every method go-sdk calls on
// it (resultType and _meta for 2026-07-28 requests); only the JSON changes.
type initializeResult struct {
	*mcp.InitializeResult
	skills wire.LegacyCapability
}

// MarshalJSON writes the result with capabilities.skills added.
func (r *initializeResult) MarshalJSON() ([]byte, error) {
	return addCapability(r.InitializeResult, r.skills)
}

type discoverResult struct {
	*mcp.DiscoverResult
	skills wire.LegacyCapability
}

// MarshalJSON writes the result with capabilities.skills added.
func (r *discoverResult) MarshalJSON() ([]byte, error) {
	return addCapability(r.DiscoverResult, r.skills)
}

// addCapability marshals res and splices "skills" into its capabilities,
// members otherwise as go-sdk wrote them (once per connection, so without
// a round trip through maps).
func addCapability(res any, c wire.LegacyCapability) ([]byte, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	skills, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	fields, err := jsonobj.Fields(b)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(b) + len(skills) + 32)
	member := func(first bool, key string, value []byte) {
		if !first {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(value)
	}
	out.WriteByte('{')
	top, hasCaps := 0, false
	for _, f := range fields {
		if f.Key != "capabilities" {
			member(top == 0, f.Key, f.Value)
			top++
			continue
		}
		if string(f.Value) == "null" {
			continue // written below, with skills alone
		}
		hasCaps = true
		caps, err := jsonobj.Fields(f.Value)
		if err != nil {
			return nil, err
		}
		member(top == 0, f.Key, nil)
		top++
		out.WriteByte('{')
		n := 0
		for _, cf := range caps {
			if cf.Key != "skills" {
				member(n == 0, cf.Key, cf.Value)
				n++
			}
		}
		member(n == 0, "skills", skills)
		out.WriteByte('}')
	}
	if !hasCaps {
		member(top == 0, "capabilities", append(append([]byte(`{"skills":`), skills...), '}'))
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}
