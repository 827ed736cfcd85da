package skillserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/wire"
)

// ReadResourceResult is the resources/read result the server sends. It is
// go-sdk's shape plus resultType, which go-sdk adds to reads only for
// 2026-07-28 sessions and the extension's examples show on every result.
type ReadResourceResult struct {
	mcp.ResultBase
	ResultType string                  `json:"resultType"`
	Contents   []*mcp.ResourceContents `json:"contents"`
	TTLMs      int64                   `json:"ttlMs"`
	CacheScope string                  `json:"cacheScope"`
}

func (srv *Server) ttlMs() int64 { return srv.opts.TTL.Milliseconds() }

// page resolves a cursor to the index of the first item to return; n is
// the number of items. A cursor issued for another snapshot is refused
// with errStaleCursor: after the catalog changed, an offset or a last key
// of the old listing could skip or repeat entries of the new one without
// the client knowing, so the client lists again from the start.
func (srv *Server) page(raw string, kind byte, scope string, snap published.Snapshot, n int) (int, error) {
	if raw == "" {
		return 0, nil
	}
	c, err := decodeCursor(srv.key, raw)
	if err != nil || c.kind != kind || c.scope != scope {
		return 0, errBadCursor
	}
	if c.snap != snap.ID() || c.owner != cursorOwner(snap) {
		// Another caller's cursor gets the stale answer too: telling them
		// apart would say that another caller's listing exists.
		return 0, errStaleCursor
	}
	if c.offset > n {
		return 0, errBadCursor
	}
	return c.offset, nil
}

// badCursor is the -32602 error for a cursor page refused: err tells a
// forged or foreign cursor from one the catalog's change made stale.
func badCursor(method, uri string, err error) *jsonrpc.Error {
	e := invalidParams(uri, "%s: invalid cursor: pass back a nextCursor exactly as this server returned it, or omit cursor to start from the beginning", method)
	if errors.Is(err, errStaleCursor) {
		e = invalidParams(uri, "%s: stale cursor: the catalog changed since this cursor was issued; list again from the start (omit cursor)", method)
	}
	if uri == "" {
		e.Data = nil
	}
	return e
}

func (srv *Server) listSkills(ctx context.Context, p *wire.ListSkillsParams) (*wire.ListSkillsResult, error) {
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return srv.listSkillsIn(snap, p)
}

// listSkillsIn answers skills/list from snap.
func (srv *Server) listSkillsIn(snap published.Snapshot, p *wire.ListSkillsParams) (*wire.ListSkillsResult, error) {
	skills := snap.Skills()
	start, err := srv.page(p.Cursor, kindSkills, "", snap, len(skills))
	if err != nil {
		return nil, badCursor(wire.MethodListSkills, "", err)
	}
	end := srv.pageEnd(skills, start)
	res := &wire.ListSkillsResult{
		ResultType: wire.ResultComplete,
		Skills:     make([]wire.Skill, 0, end-start),
		TTLMs:      srv.ttlMs(),
		CacheScope: srv.opts.CacheScope,
		NextCursor: srv.nextSkillsCursor(snap, skills, end),
	}
	for _, sk := range skills[start:end] {
		res.Skills = append(res.Skills, entry(sk))
	}
	return res, nil
}

// pageEnd returns where the skills/list page of skills that starts at
// start ends: after PageSize skills, or before the skill whose files would
// take the page past maxPageResources manifest entries (a page holds at
// least one skill).
func (srv *Server) pageEnd(skills []*catalog.Skill, start int) int {
	files, i := 0, start
	for ; i < len(skills) && i-start < srv.opts.PageSize; i++ {
		if i > start && files+len(skills[i].Files) > maxPageResources {
			break
		}
		files += len(skills[i].Files)
	}
	return i
}

// nextSkillsCursor returns the nextCursor of the skills/list page of snap
// that ends before skills[end], or "" for the last page.
func (srv *Server) nextSkillsCursor(snap published.Snapshot, skills []*catalog.Skill, end int) string {
	if end >= len(skills) {
		return ""
	}
	return cursor{kind: kindSkills, snap: snap.ID(), owner: cursorOwner(snap), offset: end, last: skills[end-1].URI}.encode(srv.key)
}

// entry renders a skill as a SEP-2640 Skill entry.
func entry(sk *catalog.Skill) wire.Skill {
	if len(sk.Files) == 0 {
		return wire.Skill{URI: sk.URI, Frontmatter: sk.Frontmatter, Resources: &wire.Resources{Dynamic: true}}
	}
	rs := make([]wire.SkillResource, len(sk.Files))
	for i, f := range sk.Files {
		rs[i] = wire.SkillResource{URI: f.URI, Digest: f.Digest, Size: f.Size}
	}
	return wire.Skill{URI: sk.URI, Frontmatter: sk.Frontmatter, Resources: &wire.Resources{Files: rs}, Meta: entryMeta(sk)}
}

func (srv *Server) getSkill(ctx context.Context, p *wire.GetSkillParams) (*wire.GetSkillResult, error) {
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	res, sk, err := srv.getSkillIn(snap, p.URI)
	if err != nil {
		return nil, err
	}
	res.Skill = entry(sk)
	return res, nil
}

// getSkillIn answers skills/get from snap, without the entry: the skill is
// returned for the caller to render.
func (srv *Server) getSkillIn(snap published.Snapshot, uri string) (*wire.GetSkillResult, *catalog.Skill, error) {
	sk := snap.Skill(uri)
	if sk == nil {
		return nil, nil, srv.notASkill(snap, uri)
	}
	return &wire.GetSkillResult{
		ResultType: wire.ResultComplete,
		TTLMs:      srv.ttlMs(),
		CacheScope: srv.opts.CacheScope,
	}, sk, nil
}

func (srv *Server) notASkill(snap published.Snapshot, uri string) *jsonrpc.Error {
	if uri == "" {
		return invalidParams(uri, "skills/get: the uri parameter is missing or empty; pass the URI of a skill's SKILL.md, as listed by skills/list")
	}
	if f := snap.File(uri); f != nil {
		return invalidParams(uri, "No skill is served at %s: it is a file, not the SKILL.md of a published skill; skills/get takes the uri of a skills/list entry", show(uri))
	}
	if snap.Dir(uri) != nil {
		if snap.Skill(uri+"/SKILL.md") != nil {
			return invalidParams(uri, "No skill is served at %s: it is a skill's directory; call skills/get with %s/SKILL.md", show(uri), show(uri))
		}
		return invalidParams(uri, "No skill is served at %s: it is a directory resource, not a skill's SKILL.md", show(uri))
	}
	return invalidParams(uri, "No skill is served at %s%s", show(uri), because(uri, srv.schemeList()))
}

func (srv *Server) readDirectory(ctx context.Context, p *wire.ReadDirectoryParams) (*wire.ReadDirectoryResult, error) {
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	uri := p.URI
	d := snap.Dir(uri)
	if d == nil {
		switch {
		case uri == "":
			return nil, invalidParams(uri, "resources/directory/read: the uri parameter is missing or empty; pass a directory URI such as a skill's root")
		case snap.File(uri) != nil:
			return nil, invalidParams(uri, "%s is not a directory resource: it is a file; read it with resources/read", show(uri))
		}
		return nil, invalidParams(uri, "No directory is served at %s%s", show(uri), because(uri, srv.schemeList()))
	}
	kids := d.Children
	start, err := srv.page(p.Cursor, kindDirectory, uri, snap, len(kids))
	if err != nil {
		return nil, badCursor(wire.MethodReadDirectory, uri, err)
	}
	end := min(start+srv.opts.PageSize, len(kids))
	ttl := srv.ttlMs()
	res := &wire.ReadDirectoryResult{ResultType: wire.ResultComplete, Resources: make([]wire.DirectoryEntry, 0, end-start),
		TTLMs: &ttl, CacheScope: srv.opts.CacheScope}
	for _, ch := range kids[start:end] {
		e := wire.DirectoryEntry{URI: ch.URI, Name: ch.Name, MIMEType: wire.DirectoryMIMEType}
		if f := ch.File; f != nil {
			size := f.Size
			e.MIMEType, e.Size = f.MIMEType, &size
			if sk := snap.Skill(f.URI); sk != nil {
				// A skill's SKILL.md is named and described from its frontmatter.
				e.Name, e.Description = sk.Name, sk.Frontmatter.Description()
			}
		}
		res.Resources = append(res.Resources, e)
	}
	if end < len(kids) {
		res.NextCursor = cursor{kind: kindDirectory, snap: snap.ID(), owner: cursorOwner(snap), scope: uri, offset: end, last: kids[end-1].Name}.encode(srv.key)
	}
	return res, nil
}

// resource renders a file as a base-protocol Resource.
func resource(snap published.Snapshot, f *catalog.File) *mcp.Resource {
	r := &mcp.Resource{URI: f.URI, Name: f.Name, MIMEType: f.MIMEType, Size: f.Size,
		Annotations: &mcp.Annotations{Audience: []mcp.Role{"assistant"}, Priority: 0.3}}
	if sk := snap.Skill(f.URI); sk != nil {
		r.Name, r.Description = sk.Name, sk.Frontmatter.Description()
		r.Annotations.Priority = 0.8
	}
	if !f.ModTime.IsZero() {
		r.Annotations.LastModified = f.ModTime.UTC().Format(time.RFC3339)
	}
	return r
}

// listResources lists the server's own resources (if any) first, then
// every skill file. Cursors of ours carry a prefix go-sdk's never have.
func (srv *Server) listResources(ctx context.Context, req *mcp.ListResourcesRequest, next mcp.MethodHandler) (mcp.Result, error) {
	raw := ""
	if req.Params != nil {
		raw = req.Params.Cursor
	}
	if raw != "" && !isOurs(raw) {
		// A cursor of the underlying server's own resources.
		res, err := next(ctx, "resources/list", req)
		if err != nil {
			return nil, badCursor("resources/list", "", errBadCursor)
		}
		return srv.chain(ctx, res), nil
	}
	if raw == "" {
		res, err := next(ctx, "resources/list", req)
		if err != nil {
			return nil, err
		}
		if r, ok := res.(*mcp.ListResourcesResult); !ok || len(r.Resources) > 0 || r.NextCursor != "" {
			return srv.chain(ctx, res), nil
		}
	}
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	files := snap.Files()
	start, err := srv.page(raw, kindResources, "", snap, len(files))
	if err != nil {
		return nil, badCursor("resources/list", "", err)
	}
	end := min(start+srv.opts.PageSize, len(files))
	res := &mcp.ListResourcesResult{Resources: make([]*mcp.Resource, 0, end-start+1)}
	if start == 0 && srv.compat != nil {
		res.Resources = append(res.Resources, srv.compat.resources()...)
	}
	for _, f := range files[start:end] {
		res.Resources = append(res.Resources, resource(snap, f))
	}
	if end < len(files) {
		res.NextCursor = cursor{kind: kindResources, snap: snap.ID(), owner: cursorOwner(snap), offset: end, last: files[end-1].URI}.encode(srv.key)
	}
	res.TTLMs, res.CacheScope = int(srv.ttlMs()), srv.opts.CacheScope
	return res, nil
}

// chain points the last page of the underlying server's resources at the
// first page of skill files.
func (srv *Server) chain(ctx context.Context, res mcp.Result) mcp.Result {
	r, ok := res.(*mcp.ListResourcesResult)
	if !ok || r.NextCursor != "" {
		return res
	}
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return res
	}
	if len(snap.Files()) > 0 || (srv.compat != nil && len(srv.compat.resources()) > 0) {
		r.NextCursor = cursor{kind: kindResources, snap: snap.ID(), owner: cursorOwner(snap)}.encode(srv.key)
	}
	return res
}

// legacyResourceNotFound is the resource-not-found code of MCP revisions
// before SEP-2164, still sent by servers that opt back into it.
const legacyResourceNotFound = -32002

func (srv *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest, next mcp.MethodHandler) (mcp.Result, error) {
	uri := req.Params.URI
	if srv.compatResource(uri) {
		return srv.compat.read(ctx, uri)
	}
	snap, err := srv.snapshot(ctx)
	if err != nil && srv.owns(uri) {
		return nil, err
	}
	if !srv.owns(uri) && (snap == nil || snap.File(uri) == nil) {
		res, err := next(ctx, "resources/read", req)
		var we *jsonrpc.Error
		// The wrapped server's own "not found": -32602 today, -32002 from
		// servers that opted back into the legacy code.
		if err != nil && errors.As(err, &we) && (we.Code == jsonrpc.CodeInvalidParams || we.Code == legacyResourceNotFound) {
			return nil, invalidParams(uri, "No resource is served at %s%s", show(uri), because(uri, srv.schemeList()))
		}
		return res, err
	}
	return srv.read(ctx, uri)
}

// read serves one file, always with bytes matching the digest published in
// the snapshot it is read from.
func (srv *Server) read(ctx context.Context, uri string) (*ReadResourceResult, error) {
	snap, f, data, err := srv.readFile(ctx, uri)
	if err != nil {
		return nil, err
	}
	srv.loadedFile(ctx, snap, uri)
	return srv.readResult(uri, f, data), nil
}

// readFile returns the file at uri and its bytes, which match its digest
// in the snapshot returned (a fresh one when the file changed on disk).
func (srv *Server) readFile(ctx context.Context, uri string) (published.Snapshot, *catalog.File, []byte, error) {
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	f := snap.File(uri)
	if f == nil {
		if snap.Dir(uri) != nil {
			// A directory is listed, never read as a file.
			return nil, nil, nil, invalidParams(uri, "%s is a directory resource, not a file: list its children with resources/directory/read", show(uri))
		}
		return nil, nil, nil, invalidParams(uri, "No resource is served at %s%s", show(uri), because(uri, srv.schemeList()))
	}
	data, err := snap.ReadFile(ctx, f)
	if errors.Is(err, catalog.ErrChanged) {
		// The file changed after the snapshot was taken: serve it from a
		// snapshot that publishes its new digest, never the old entry.
		fresh, rerr := srv.refresh(ctx, snap)
		if rerr != nil {
			srv.log.Error("cannot refresh the skills after a file changed", "uri", uri, "err", rerr)
			return nil, nil, nil, internalError(uri, "%s changed on the server and the skills could not be re-indexed; try again later", show(uri))
		}
		snap = fresh
		if f = snap.File(uri); f == nil {
			return nil, nil, nil, invalidParams(uri, "No resource is served at %s: the file was removed from the server; refresh the skill with skills/get or skills/list", show(uri))
		}
		data, err = snap.ReadFile(ctx, f)
	}
	if err != nil {
		srv.log.Error("cannot read a skill file", "uri", uri, "err", err)
		if errors.Is(err, catalog.ErrChanged) {
			return nil, nil, nil, internalError(uri, "%s is changing on the server; try again shortly", show(uri))
		}
		return nil, nil, nil, internalError(uri, "cannot read %s on the server", show(uri))
	}
	return snap, f, data, nil
}

// readResult is the resources/read result of file f with content data.
func (srv *Server) readResult(uri string, f *catalog.File, data []byte) *ReadResourceResult {
	c := &mcp.ResourceContents{URI: uri, MIMEType: f.MIMEType}
	if f.Text && len(data) > 0 {
		c.Text = string(data)
	} else {
		c.Blob = data
		if c.Blob == nil {
			c.Blob = []byte{} // "blob": "" for an empty file, never no content at all
		}
	}
	return &ReadResourceResult{
		ResultType: wire.ResultComplete,
		Contents:   []*mcp.ResourceContents{c},
		TTLMs:      srv.ttlMs(),
		CacheScope: srv.opts.CacheScope,
	}
}

// listAny answers skills/list: with the Skills Extension's entries, the
// page encoded once per snapshot, unless a compatibility profile answers
// the client. init is the session's initialize params ([sessionInit]), or
// what the thin read path knows to be the same.
func (srv *Server) listAny(ctx context.Context, init *mcp.InitializeParams, p *wire.ListSkillsParams) (*listResponse, error) {
	if srv.compat != nil {
		if res, ok, err := srv.compat.list(ctx, init, p); ok {
			return res, err
		}
	}
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	page, err := srv.slimPage(snap, p.Cursor)
	if err != nil {
		return nil, err
	}
	return &listResponse{page: page}, nil
}

// getResponse is a skills/get result: the extension's, or one a
// compatibility profile encodes.
type getResponse struct {
	mcp.ResultBase
	stable *wire.GetSkillResult
	entry  []byte // the encoded entry of stable, whose Skill is then unset
	other  func(mcp.ResultBase) ([]byte, error)
	loaded string // the path of the skill the extension's answer loads
}

// MarshalJSON writes the chosen result, with the _meta go-sdk may have set.
func (r *getResponse) MarshalJSON() ([]byte, error) {
	if r.other != nil {
		return r.other(r.ResultBase)
	}
	if r.entry != nil {
		return encodeGet(r.ResultBase, r.stable, r.entry)
	}
	r.stable.ResultBase = r.ResultBase
	return json.Marshal(r.stable)
}

// getAny answers skills/get by uri, unless a compatibility profile
// answers its parameters.
func (srv *Server) getAny(ctx context.Context, p *wire.GetParams) (*getResponse, error) {
	if p == nil {
		p = &wire.GetParams{}
	}
	if srv.compat != nil {
		if res, ok, err := srv.compat.get(ctx, p); ok {
			return res, err
		}
	}
	uri := ""
	if p.URI != nil {
		uri = *p.URI
	}
	if p.Name != nil {
		return nil, invalidParams(uri, "skills/get takes {\"uri\": <URI of a skills/list entry>}; no other form is served here")
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
	return &getResponse{stable: res, entry: enc, loaded: sk.Path}, nil
}

// decorate lets the compatibility profiles add to an initialize or
// server/discover result.
func (srv *Server) decorate(res mcp.Result) mcp.Result {
	if srv.compat == nil {
		return res
	}
	return srv.compat.decorate(res)
}
