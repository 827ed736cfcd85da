package skillserver

import (
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
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/wire"
)

// Profile names a wire design the server answers in. SEP-2640 (the Skills
// Extension) is the standard; the others are compatibility profiles for
// clients written against earlier designs. They share one snapshot and one
// publication policy: a skill the extension would not publish is served by
// no profile.
type Profile string

// The profiles. See the README section "Compatibility profiles" for the
// dispatch table.
const (
	// ProfileSEP2640 is the Skills Extension: skills/list and skills/get by
	// uri, resources/directory/read, extensions["io.modelcontextprotocol/skills"].
	ProfileSEP2640 Profile = "sep2640"
	// ProfileIndex publishes skill://index.json (seed 002, the gemini-cli
	// and goose prototypes).
	ProfileIndex Profile = "index"
	// ProfileSEP2076 adds the SEP-2076 fields to skills/list entries,
	// skills/get by name, and the top-level "skills" capability.
	ProfileSEP2076 Profile = "sep2076"
	// ProfileSeed001 adds skills/read and skills/read_reference, and
	// skills/execute when [Options.Scripts] is set.
	ProfileSeed001 Profile = "seed001"
)

// DefaultProfiles are served when [Options.Profiles] is nil: every profile,
// since none of them changes what a SEP-2640 client sees beyond fields and
// capability keys it ignores. skills/execute additionally needs
// [Options.Scripts].
var DefaultProfiles = []Profile{ProfileSEP2640, ProfileIndex, ProfileSEP2076, ProfileSeed001}

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

// profiles is the resolved profile set.
type profiles struct {
	sep2640, index, sep2076, seed001 bool
	execute                          bool
}

func (p profiles) legacyCapability() bool { return p.sep2076 || p.seed001 }

func (srv *Server) setProfiles() error {
	list := srv.opts.Profiles
	if list == nil {
		list = DefaultProfiles
	}
	if len(list) == 0 {
		return errors.New("server: Options.Profiles is empty; leave it nil for the defaults or name at least one profile")
	}
	for _, p := range list {
		switch p {
		case ProfileSEP2640:
			srv.prof.sep2640 = true
		case ProfileIndex:
			srv.prof.index = true
		case ProfileSEP2076:
			srv.prof.sep2076 = true
		case ProfileSeed001:
			srv.prof.seed001 = true
		default:
			return fmt.Errorf("server: Options.Profiles: %w %q: use %s", ErrUnknownProfile, p, profileNames())
		}
	}
	if srv.opts.Scripts != nil && !srv.prof.seed001 {
		return errors.New("server: Options.Scripts is set but the seed001 profile, which defines skills/execute, is not served")
	}
	srv.prof.execute = srv.prof.seed001 && srv.opts.Scripts != nil
	return nil
}

// registerProfiles installs the methods only the legacy profiles define.
func (srv *Server) registerProfiles() error {
	s := srv.mcp
	if !srv.prof.seed001 {
		return nil
	}
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodReadSkill, func(ctx context.Context, _ *mcp.ServerSession, p *wire.NameParams) (*wire.ReadResult, error) {
		if p == nil {
			p = &wire.NameParams{}
		}
		return srv.readSkill(ctx, p)
	}); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodReadReference, func(ctx context.Context, _ *mcp.ServerSession, p *wire.ReadReferenceParams) (*wire.ReadReferenceResult, error) {
		if p == nil {
			p = &wire.ReadReferenceParams{}
		}
		return srv.readReference(ctx, p)
	}); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	// Registered even when disabled, so that every transport answers with
	// an error that says how to enable it (go-sdk's HTTP handler would
	// otherwise reject the unknown method with a bare HTTP 400). Not
	// -32601: go-sdk rewrites every such message to "method not found".
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodExecute, func(ctx context.Context, _ *mcp.ServerSession, p *wire.ExecuteParams) (*wire.ExecuteResult, error) {
		if !srv.prof.execute {
			name, script := "", ""
			if p != nil {
				name, script = p.Name, p.Script
			}
			return nil, scriptFailed(name, script, "disabled",
				"skills/execute is disabled on this server: scripts run only when the operator enables them (skillport serve --allow-scripts), and then only in a sandbox")
		}
		if p == nil {
			p = &wire.ExecuteParams{}
		}
		return srv.execute(ctx, p)
	}); err != nil {
		return fmt.Errorf("server: %w", err)
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

// listAny answers skills/list for every profile at once. The SEP-2640
// entries, identical to skills/get's, are the default; the superset
// (SEP-2076's name, description and fields, which SEP-2640 readers
// ignore) goes only to a client known to lack the extension. init is the
// session's initialize params ([sessionInit]), or what the thin read path
// knows to be the same.
func (srv *Server) listAny(ctx context.Context, init *mcp.InitializeParams, p *wire.ListSkillsParams) (*listResponse, error) {
	return srv.listFor(ctx, func() bool { return !lacksExtension(init, p.Meta) }, p)
}

// listFor is listAny for a client that gets the SEP-2640 entries when
// slimOK reports so (asked only when the answer depends on it): it
// declared the extension, or nothing is known of its capabilities.
func (srv *Server) listFor(ctx context.Context, slimOK func() bool, p *wire.ListSkillsParams) (*listResponse, error) {
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	legacy := srv.prof.sep2076 || srv.prof.seed001
	slim := srv.prof.sep2640 && (!legacy || slimOK())
	if slim {
		// Pure SEP-2640 entries: the page is encoded once per snapshot.
		page, err := srv.slimPage(snap, p.Cursor)
		if err != nil {
			return nil, err
		}
		return &listResponse{page: page}, nil
	}
	if p.Cursor == "" {
		if page := srv.supersetFirst(snap); page != nil {
			return &listResponse{page: page}, nil
		}
	}
	stable, err := srv.listSkillsIn(snap, p)
	if err != nil {
		return nil, err
	}
	res := &wire.ListResult{Skills: make([]wire.ListEntry, 0, len(stable.Skills)), NextCursor: stable.NextCursor}
	if srv.prof.sep2640 {
		ttl := stable.TTLMs
		res.ResultType, res.TTLMs, res.CacheScope = stable.ResultType, &ttl, stable.CacheScope
	}
	for _, e := range stable.Skills {
		var le wire.ListEntry
		if srv.prof.sep2640 {
			res := e.Resources
			le.URI, le.Frontmatter, le.Resources, le.Meta = e.URI, e.Frontmatter.JSON(), res, e.Meta
		}
		if !slim {
			if sk := snap.Skill(e.URI); sk != nil {
				m := mapFrontmatter(sk.Frontmatter)
				le.Name, le.Description = sk.Name, sk.Frontmatter.Description()
				if srv.prof.sep2076 {
					le.Title, le.Version, le.Tags, le.Arguments = m.title, m.version, m.tags, m.arguments
					if !m.deps.Empty() {
						le.Dependencies = m.deps
					}
				}
			}
		}
		res.Skills = append(res.Skills, le)
	}
	if p.Cursor == "" {
		return srv.keepSupersetFirst(snap, &listResponse{res: res})
	}
	return &listResponse{res: res}, nil
}

// getResponse is a skills/get result in whichever design the request chose.
type getResponse struct {
	mcp.ResultBase
	stable *wire.GetSkillResult
	entry  []byte // the encoded entry of stable, whose Skill is then unset
	byName *wire.GetByNameResult
}

// MarshalJSON writes the chosen result, with the _meta go-sdk may have set.
func (r *getResponse) MarshalJSON() ([]byte, error) {
	if r.entry != nil {
		return encodeGet(r.ResultBase, r.stable, r.entry)
	}
	if r.stable != nil {
		r.stable.ResultBase = r.ResultBase
		return json.Marshal(r.stable)
	}
	r.byName.ResultBase = r.ResultBase
	return json.Marshal(r.byName)
}

// getAny dispatches skills/get on its parameters: uri is SEP-2640,
// name is SEP-2076, both or neither is an error.
func (srv *Server) getAny(ctx context.Context, p *wire.GetParams) (*getResponse, error) {
	if p == nil {
		p = &wire.GetParams{}
	}
	switch {
	case p.URI != nil && p.Name != nil:
		return nil, invalidParams(*p.URI, "skills/get: pass uri (Skills Extension) or name (SEP-2076), not both")
	case p.Name != nil:
		if !srv.prof.sep2076 {
			return nil, nameError(*p.Name, "skills/get by name (SEP-2076) is not served here; pass the uri of a skills/list entry")
		}
		res, err := srv.getByName(ctx, *p.Name, p.Arguments)
		if err != nil {
			return nil, err
		}
		return &getResponse{byName: res}, nil
	}
	uri := ""
	if p.URI != nil {
		uri = *p.URI
	}
	if !srv.prof.sep2640 {
		return nil, invalidParams(uri, "skills/get by uri (Skills Extension) is not served here; pass {\"name\": <skill name>}")
	}
	if uri == wire.IndexURI && srv.prof.index {
		return nil, invalidParams(uri, "%s is the skill index, not a skill: read it with resources/read, or call skills/get with the url of one of its entries", uri)
	}
	if uri == "" && p.URI == nil && srv.prof.sep2076 {
		return nil, invalidParams("", "skills/get needs params {\"uri\": <URI of a skill's SKILL.md>} (Skills Extension) or {\"name\": <skill name>, \"arguments\": {...}} (SEP-2076)")
	}
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	res, sk, err := srv.getSkillIn(snap, uri)
	if err != nil {
		return nil, err
	}
	enc, err := srv.encodedEntry(snap, sk, true)
	if err != nil {
		return nil, err
	}
	return &getResponse{stable: res, entry: enc}, nil
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

func (srv *Server) byName(snap Snapshot) map[string][]*catalog.Skill {
	if ix := srv.names.Load(); ix != nil && ix.id == snap.ID() {
		return ix.byName
	}
	m := map[string][]*catalog.Skill{}
	for _, sk := range snap.Skills() {
		m[sk.Name] = append(m[sk.Name], sk)
	}
	srv.names.Store(&nameIndex{id: snap.ID(), byName: m})
	return m
}

// namesCache holds the last nameIndex.
type namesCache = atomic.Pointer[nameIndex]

// lookupName resolves a skill by name: unknown and ambiguous names are
// -32602 errors, or seed 001's -32002 for unknown names
// when legacy codes are on.
func (srv *Server) lookupName(snap Snapshot, method, name string, legacyCodes bool) (*catalog.Skill, error) {
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
	if !srv.prof.sep2640 {
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
func (srv *Server) readSkillFile(ctx context.Context, snap Snapshot, f *catalog.File) ([]byte, Snapshot, error) {
	data, err := snap.ReadFile(ctx, f)
	if errors.Is(err, catalog.ErrChanged) {
		fresh, rerr := srv.src.Refresh(ctx, snap)
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
func withRetry[T any](ctx context.Context, srv *Server, fn func(Snapshot) (T, error)) (T, error) {
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
func (srv *Server) body(ctx context.Context, snap Snapshot, sk *catalog.Skill) (string, error) {
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
