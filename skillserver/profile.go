package skillserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skill"
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

// registered are the compatibility profiles, in documentation order, each
// with what makes its part of the hook: removing a profile is deleting its
// file and its line here.
var registered = []registration{
	{ProfileIndex, newIndexPart},     // profile_index.go
	{ProfileSEP2076, newSEP2076Part}, // profile_sep2076.go
	{ProfileSeed001, newSeed001Part}, // profile_seed001.go
}

type registration struct {
	name Profile
	part func(*profileSet) part
}

// DefaultProfiles are served when [Options.Profiles] is nil: every profile,
// since none of them changes what a SEP-2640 client sees beyond fields and
// capability keys it ignores. skills/execute additionally needs
// [Options.Scripts].
var DefaultProfiles = func() []Profile {
	out := []Profile{ProfileSEP2640}
	for _, r := range registered {
		out = append(out, r.name)
	}
	return out
}()

// AllProfiles lists every profile, in documentation order.
var AllProfiles = DefaultProfiles

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

	names namesCache
	deps  depState
	conns connSet
}

// part is one compatibility profile's share of the hook. A part embeds
// noPart and overrides what it adds.
type part interface {
	// legacy reports whether the profile is one of the pre-extension
	// skills primitive (SEP-2076, seed 001).
	legacy() bool
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

func (noPart) legacy() bool    { return false }
func (noPart) register() error { return nil }
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
	if srv.opts.Scripts != nil && !slices.Contains(list, ProfileSeed001) {
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

// declaredExtension reports whether the client declared the Skills
// Extension: in the request's own _meta (2026-07-28 requests carry their
// client capabilities), else at the session's initialize (init: the
// session's InitializeParams, which go-sdk synthesizes without
// capabilities for an older revision's request to a stateless server).
// A request with neither declared nothing. The thin read path decides
// through it too (fast.go), so both paths answer one client alike.
func declaredExtension(init *mcp.InitializeParams, meta mcp.Meta) bool {
	declared, _ := extensionKnown(init, meta)
	return declared
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

// extensionKnown reports whether the client declared the extension, and
// whether its capabilities are known at all.
func extensionKnown(init *mcp.InitializeParams, meta mcp.Meta) (declared, known bool) {
	if raw, ok := meta[mcp.MetaKeyClientCapabilities]; ok {
		b, err := json.Marshal(raw)
		var caps struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		}
		if err != nil || json.Unmarshal(b, &caps) != nil {
			return false, true
		}
		_, ok := caps.Extensions[wire.ExtensionID]
		return ok, true
	}
	if init == nil || init.Capabilities == nil {
		return false, false
	}
	_, ok := init.Capabilities.Extensions[wire.ExtensionID]
	return ok, true
}

// sessionInit returns what go-sdk knows of ss's client: its initialize
// params, nil without a session.
func sessionInit(ss *mcp.ServerSession) *mcp.InitializeParams {
	if ss == nil {
		return nil
	}
	return ss.InitializeParams()
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
		if page := srv.supersetFirst(snap); page != nil {
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
		r, err := srv.keepSupersetFirst(snap, &listResponse{res: res})
		return r, true, err
	}
	return &listResponse{res: res}, true, nil
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

// nameIndex maps frontmatter names to the skills that carry them, for one
// snapshot.
type nameIndex struct {
	id     string
	byName map[string][]*catalog.Skill
}

func (srv *Server) byName(snap published.Snapshot) map[string][]*catalog.Skill {
	if ix := srv.profiles().names.Load(); ix != nil && ix.id == snap.ID() {
		return ix.byName
	}
	m := map[string][]*catalog.Skill{}
	for _, sk := range snap.Skills() {
		m[sk.Name] = append(m[sk.Name], sk)
	}
	srv.profiles().names.Store(&nameIndex{id: snap.ID(), byName: m})
	return m
}

// namesCache holds the last nameIndex.
type namesCache = atomic.Pointer[nameIndex]

// lookupName resolves a skill by name: unknown and ambiguous names are
// -32602 errors, or seed 001's -32002 for unknown names
// when legacy codes are on.
func (srv *Server) lookupName(snap published.Snapshot, method, name string, legacyCodes bool) (*catalog.Skill, error) {
	if name == "" {
		return nil, nameError(name, "%s: the name parameter is missing or empty; pass a skill name as skills/list returns it", method)
	}
	cands := srv.byName(snap)[name]
	switch len(cands) {
	case 0:
		e := nameError(name, "%s: no skill named %q is served here; list the skills with skills/list", method, clip(name))
		if legacyCodes && srv.opts.LegacyErrorCodes {
			e.Code, e.Message = wire.CodeSkillNotFound, "Skill not found: "+clip(name)
		}
		return nil, e
	case 1:
		return cands[0], nil
	}
	uris := make([]string, len(cands))
	for i, c := range cands {
		uris[i] = c.URI
	}
	// Point at a way out this server serves: skills/get by uri is the
	// Skills Extension's, absent when only legacy profiles are.
	how := "use skills/get with one of the URIs in data.candidates"
	if !srv.ext {
		how = "this server's profiles select skills by name only, so ask its operator to rename one of data.candidates or to serve the sep2640 profile (skills/get by uri)"
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("%s: %d skills are named %q; names are not unique on this server: %s", method, len(cands), clip(name), how),
		Data:    nameData(name, map[string]any{"candidates": uris})}
}

func clip(s string) string {
	if len(s) > 100 {
		return show(s)
	}
	return s
}

// relPath returns a file's path relative to its skill's root.
func relPath(sk *catalog.Skill, f *catalog.File) string {
	rest, ok := strings.CutPrefix(f.URI, sk.Root+"/")
	if !ok {
		return ""
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		if d, err := url.PathUnescape(s); err == nil {
			segs[i] = d
		}
	}
	return strings.Join(segs, "/")
}

// readSkillFile returns a file's bytes from snap, re-reading from a fresh
// snapshot when the file changed under it; the caller then answers from the
// returned snapshot.
func (srv *Server) readSkillFile(ctx context.Context, snap published.Snapshot, f *catalog.File) ([]byte, published.Snapshot, error) {
	data, err := snap.ReadFile(ctx, f)
	if errors.Is(err, catalog.ErrChanged) {
		fresh, rerr := srv.refresh(ctx, snap)
		if rerr != nil {
			srv.log.Error("cannot refresh the skills after a file changed", "uri", f.URI, "err", rerr)
			return nil, nil, internalError(f.URI, "%s changed on the server and the skills could not be re-indexed; try again later", show(f.URI))
		}
		return nil, fresh, errRetry
	}
	if err != nil {
		srv.log.Error("cannot read a skill file", "uri", f.URI, "err", err)
		return nil, nil, internalError(f.URI, "cannot read %s on the server", show(f.URI))
	}
	return data, snap, nil
}

// errRetry asks a by-name handler to answer again from a fresh snapshot.
var errRetry = errors.New("snapshot changed")

// withRetry runs fn against the caller's view of the current snapshot
// (so a lookup by name finds only what the caller may see), and once more
// against a fresh one if a file changed under it.
func withRetry[T any](ctx context.Context, srv *Server, fn func(published.Snapshot) (T, error)) (T, error) {
	var zero T
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return zero, err
	}
	v, err := fn(snap)
	if errors.Is(err, errRetry) {
		if snap, err = srv.snapshot(ctx); err != nil {
			return zero, err
		}
		v, err = fn(snap)
		if errors.Is(err, errRetry) {
			return zero, internalError("", "the skills are changing on the server; try again shortly")
		}
	}
	return v, err
}

// body returns the instructions of a skill: its SKILL.md without the
// frontmatter, byte for byte.
func (srv *Server) body(ctx context.Context, snap published.Snapshot, sk *catalog.Skill) (string, error) {
	f := snap.File(sk.URI)
	if f == nil {
		return "", internalError(sk.URI, "%s is listed but not served; try again shortly", show(sk.URI))
	}
	data, _, err := srv.readSkillFile(ctx, snap, f)
	if err != nil {
		return "", err
	}
	doc, perr := skill.Parse(data)
	if perr != nil {
		srv.log.Error("a published SKILL.md no longer parses", "uri", sk.URI, "err", perr)
		return "", internalError(sk.URI, "%s cannot be parsed on the server", show(sk.URI))
	}
	return string(doc.Body), nil
}

// rawField returns a top-level field of a JSON object as raw bytes, keys
// and nested order as written.
func rawField(obj []byte, key string) json.RawMessage {
	fs, _ := jsonobj.Fields(obj)
	for _, f := range fs {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
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

// legacyFields are the SEP-2076 fields a SKILL.md frontmatter supplies
// (seed 001 reads its title and tags from them too).
//
// Mapping (each field is optional; a value of the wrong type is ignored):
//
//	title        <- title, else metadata.title            (string)
//	version      <- version, else metadata.version        (string or number)
//	tags         <- tags, else metadata.tags              (list of strings, or one comma-separated string)
//	arguments    <- arguments                             (list of {name, description, required}, or of names)
//	dependencies <- dependencies                          ({tools: [name], prompts: [name | {name}], resources: [uri | {uri}]})
type legacyFields struct {
	title, version string
	tags           []string
	arguments      []wire.SkillArgument
	deps           *wire.SkillDependencies
}

func mapFrontmatter(fm skill.Frontmatter) legacyFields {
	var out legacyFields
	meta, _ := get(fm, "metadata").(map[string]any)
	pick := func(key string) any {
		if v := get(fm, key); v != nil {
			return v
		}
		if meta != nil {
			return meta[key]
		}
		return nil
	}
	out.title, _ = pick("title").(string)
	switch v := pick("version").(type) {
	case string:
		out.version = v
	case json.Number:
		out.version = v.String()
	}
	switch v := pick("tags").(type) {
	case string:
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out.tags = append(out.tags, t)
			}
		}
	case []any:
		for _, t := range v {
			if s, ok := t.(string); ok && s != "" {
				out.tags = append(out.tags, s)
			}
		}
	}
	if args, ok := get(fm, "arguments").([]any); ok {
		for _, a := range args {
			switch a := a.(type) {
			case string:
				if a != "" {
					out.arguments = append(out.arguments, wire.SkillArgument{Name: a})
				}
			case map[string]any:
				name, _ := a["name"].(string)
				if name == "" {
					continue
				}
				desc, _ := a["description"].(string)
				req, _ := a["required"].(bool)
				out.arguments = append(out.arguments, wire.SkillArgument{Name: name, Description: desc, Required: req})
			}
		}
	}
	if d, ok := get(fm, "dependencies").(map[string]any); ok {
		deps := &wire.SkillDependencies{}
		for _, t := range list(d["tools"]) {
			if s, ok := t.(string); ok && s != "" {
				deps.Tools = append(deps.Tools, s)
			}
		}
		for _, p := range list(d["prompts"]) {
			name, _ := p.(string)
			if m, ok := p.(map[string]any); ok {
				name, _ = m["name"].(string)
			}
			if name != "" {
				deps.Prompts = append(deps.Prompts, wire.PromptReference{Type: "ref/prompt", Name: name})
			}
		}
		for _, r := range list(d["resources"]) {
			uri, _ := r.(string)
			if m, ok := r.(map[string]any); ok {
				uri, _ = m["uri"].(string)
			}
			if uri != "" {
				deps.Resources = append(deps.Resources, wire.ResourceReference{Type: "ref/resource", URI: uri})
			}
		}
		if !deps.Empty() {
			out.deps = deps
		}
	}
	return out
}

func get(fm skill.Frontmatter, key string) any { v, _ := fm.Get(key); return v }

func list(v any) []any { l, _ := v.([]any); return l }
