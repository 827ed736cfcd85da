package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/wire"
)

// Loaded is a skill the host is acting on: its verified SKILL.md is in the
// model's context, and the host holds the entry it was loaded from (the
// acting window). Every file read through it resolves against the
// skill root, must be listed in the held entry, and is verified; reads go to
// the skill's own origin only. A skill read through a compatibility
// profile may have no manifest: the files its server listed when it was
// loaded are held instead, and reads of them are bounded like those of a
// "dynamic" skill and never verified.
type Loaded struct {
	// Entry is the held entry.
	Entry *Entry
	// Document is the parsed SKILL.md.
	Document *skill.Document
	// Content is SKILL.md byte for byte, as verified.
	Content []byte

	h          *Host
	grantTools bool
	held       heldFiles // files a compatibility profile's server listed; nil otherwise

	mu        sync.Mutex
	retrieved int64 // bytes read for a dynamic skill
	closed    bool
}

// File is a verified file of a loaded skill.
type File struct {
	// URI is the file's resource URI; Path is relative to the skill root.
	URI, Path string
	// Data is the content. For a "dynamic" skill it is unverified.
	Data []byte
	// MIMEType is what the server reported, if anything.
	MIMEType string
	// Verified is false only for files of "dynamic" skills.
	Verified bool
}

// DirEntry is a child in a skill directory listing.
type DirEntry struct {
	Name string
	URI  string
	// Dir is set for subdirectories.
	Dir bool
	// Size is the file size from the manifest, -1 if unknown.
	Size int64
}

// AllowedTools returns the skill's allowed-tools field if it may take
// effect: always for filesystem skills; for MCP skills only when the user
// granted it for this skill. Otherwise "".
func (l *Loaded) AllowedTools() string {
	s, _ := l.Document.Frontmatter.String("allowed-tools")
	if l.Entry.Kind == KindMCP && !l.grantTools {
		return ""
	}
	return s
}

// Close ends the acting window; later reads fail with ErrNotLoaded.
func (l *Loaded) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// Load loads a skill: for an MCP skill it refreshes a stale entry
// (ttlMs), declines what policy declines, obtains approval bound to the
// resources set (a persisted one if it matches exactly), then reads SKILL.md
// from the skill's origin and verifies size, SHA-256 and frontmatter. Any
// mismatch returns a *VerificationError and nothing else: the content is
// discarded and the entry refreshed with skills/get.
func (h *Host) Load(ctx context.Context, e *Entry) (*Loaded, error) {
	e = h.current(e)
	if e.Kind == KindFilesystem {
		return h.loadLocal(e)
	}
	o := h.byLabel[e.Origin]
	if o == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownOrigin, e.Origin)
	}
	if e.Profile == "" && time.Now().After(e.expires) {
		if fresh, err := o.get(ctx, e.URI); err == nil {
			h.rebuild()
			e = h.current(fresh)
		} else {
			h.log.Debug("skills: refresh of a stale entry failed; using the listed entry", "origin", e.Origin, "uri", e.URI, "err", err)
		}
	}
	if e.Declined != nil {
		return nil, e.Declined
	}
	grant, err := h.approve(ctx, e)
	if err != nil {
		return nil, err
	}
	var res *wire.SkillResource
	if !e.Dynamic {
		r, _ := e.File(e.URI)
		res = &r
	}
	if e.Profile != "" && compatProfiles != nil {
		if l, ok, err := compatProfiles.load(ctx, h, o, e, grant); ok {
			return l, err
		}
	}
	l := &Loaded{Entry: e, h: h, grantTools: grant}
	data, _, err := l.fetch(ctx, o, e.URI, res)
	if err != nil {
		return nil, err
	}
	if e.Profile != "" && compatProfiles != nil {
		if err := compatProfiles.check(e, data); err != nil {
			return nil, err
		}
	}
	doc, err := h.parseSkillMD(ctx, o, e, data)
	if err != nil {
		return nil, err
	}
	l.Document, l.Content = doc, data
	return l, nil
}

func (h *Host) loadLocal(e *Entry) (*Loaded, error) {
	f := e.cat.File(e.URI)
	data, err := e.cat.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", e.Origin, e.Dir, err)
	}
	doc, err := skill.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", e.Origin, e.Dir, err)
	}
	return &Loaded{Entry: e, Document: doc, Content: data, h: h}, nil
}

// approve returns whether allowed-tools was granted, or ErrNotApproved.
// Approval requests show only the entry: nothing is fetched to ask.
func (h *Host) approve(ctx context.Context, e *Entry) (grantTools bool, err error) {
	k := ""
	if !e.Dynamic {
		k = approval.Key(e.Origin, e.URI, e.Files)
		if rec, ok := h.opts.Approvals.Lookup(k); ok {
			return rec.GrantTools, nil
		}
	}
	tools, _ := e.Frontmatter.String("allowed-tools")
	req := &approval.Request{
		Kind: approval.Load, Origin: e.Origin, URI: e.URI, Name: e.Name, Description: e.Description(),
		Files: e.Files, Dynamic: e.Dynamic, Size: e.Size, AllowedTools: tools, Warnings: e.Warnings,
	}
	d, err := h.opts.Approver.Approve(ctx, req)
	if err != nil {
		return false, fmt.Errorf("%w: %s: %s: %w", ErrNotApproved, e.Origin, e.Name, err)
	}
	if !d.Allow {
		return false, fmt.Errorf("%w: loading skill %s from %s was not approved", ErrNotApproved, e.Name, e.Origin)
	}
	if d.Remember && !e.Dynamic {
		if err := h.opts.Approvals.Save(k, approval.Record{Label: e.Origin, URI: e.URI, Approved: time.Now().UTC(), GrantTools: d.GrantTools}); err != nil {
			h.log.Warn("skills: approval not persisted", "err", err)
		}
	}
	return d.GrantTools, nil
}

// refreshAfterFailure recovers from a verification failure the way the
// extension prescribes: skills/get for the skill, which replaces the entry
// (and, through ingest, revokes an approval bound to the old set). It marks
// the error Changed when the server now publishes a different set.
func (h *Host) refreshAfterFailure(ctx context.Context, o *originState, e *Entry, verr *VerificationError) {
	fresh, err := o.get(ctx, e.URI)
	if err != nil {
		h.log.Debug("skills: refresh after a verification failure failed", "origin", e.Origin, "uri", e.URI, "err", err)
		return
	}
	h.rebuild()
	if e.Dynamic != fresh.Dynamic || approval.Key(e.Origin, e.URI, e.Files) != approval.Key(fresh.Origin, fresh.URI, fresh.Files) {
		verr.Changed = true
	}
}

// fetch reads uri from origin o and verifies it against res (nil for a
// dynamic skill): exactly one content item for the URI, the length before
// the digest, then the digest. Verified bytes are cached; cached bytes are
// re-hashed on every use.
func (l *Loaded) fetch(ctx context.Context, o *originState, uri string, res *wire.SkillResource) ([]byte, string, error) {
	h := l.h
	label := o.cfg.Label
	if res != nil && res.Size != SizeUnknown && h.opts.Cache != nil {
		if data, ok := h.opts.Cache.Get(label, uri, res.Digest, res.Size); ok {
			return data, "", nil
		}
	}
	if b := h.opts.FetchBudget; b > 0 && res != nil {
		o.mu.Lock()
		sent := o.fetched
		o.mu.Unlock()
		if sent+res.Size > b {
			return nil, "", fmt.Errorf("%w: %s has already sent %d bytes this session (budget %d)", ErrBudget, label, sent, b)
		}
	}
	sess, err := o.sess()
	if err != nil {
		return nil, "", err
	}
	callCtx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	data, mime, err := skillclient.Fetch(callCtx, sess, uri, res)
	if err != nil {
		var ve *skillclient.VerifyError
		switch {
		case errors.As(err, &ve):
			verr := verification(label, err)
			if ve.Err != skillclient.ErrContents {
				// The answer was read: it counts toward the session's budget.
				if res.Size != SizeUnknown {
					o.mu.Lock()
					o.fetched += res.Size
					o.mu.Unlock()
				}
				h.refreshAfterFailure(ctx, o, l.Entry, verr)
			}
			return nil, "", verr
		case callCtx.Err() != nil:
			return nil, "", fmt.Errorf("%w: %s: resources/read %s got no answer within %v", ErrUnavailable, label, uri, h.opts.CallTimeout)
		}
		return nil, "", fmt.Errorf("%s: %w", label, err)
	}
	n := int64(len(data))
	if res == nil || res.Size == SizeUnknown {
		if err := l.account(o, uri, n); err != nil {
			return nil, "", err
		}
		if res == nil {
			return data, mime, nil
		}
	} else {
		o.mu.Lock()
		o.fetched += n
		o.mu.Unlock()
	}
	if h.opts.Cache != nil {
		if err := h.opts.Cache.Put(label, uri, data); err != nil {
			h.log.Debug("skills: not cached", "err", err)
		}
	}
	return data, mime, nil
}

// parseSkillMD checks verified SKILL.md bytes against the entry's
// frontmatter; a difference refreshes the entry, as the extension
// prescribes after a verification failure.
func (h *Host) parseSkillMD(ctx context.Context, o *originState, e *Entry, data []byte) (*skill.Document, error) {
	doc, err := skillclient.ParseSkillMD(e.URI, e.Frontmatter, data)
	if err != nil {
		verr := verification(e.Origin, err)
		if verr.Reason == ReasonFrontmatter {
			h.refreshAfterFailure(ctx, o, e, verr)
		}
		return nil, verr
	}
	return doc, nil
}

// account counts n bytes read for uri whose size was not known beforehand
// (a "dynamic" skill, or a file listed without a size) against the origin's
// session total and the skill's 16 MiB retrieval limit.
func (l *Loaded) account(o *originState, uri string, n int64) error {
	o.mu.Lock()
	o.fetched += n
	o.mu.Unlock()
	l.mu.Lock()
	l.retrieved += n
	over := l.retrieved > wire.MaxTotalBytes
	l.mu.Unlock()
	if over {
		return &VerificationError{Origin: o.cfg.Label, URI: uri, Reason: ReasonLimit}
	}
	return nil
}

// manifest returns the files a read may name: the held entry's manifest,
// or for a legacy skill the files its server listed on load. ok is false
// for a "dynamic" skill, which has neither.
func (l *Loaded) manifest() (files []wire.SkillResource, ok bool) {
	if l.held != nil {
		return l.held.listed(), true
	}
	return l.Entry.Files, !l.Entry.Dynamic
}

func (l *Loaded) open() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("%w: %s: the acting window is closed; load the skill again", ErrNotLoaded, l.Entry.Name)
	}
	return nil
}

// resolve turns a reference into a URI inside the skill root.
func (l *Loaded) resolve(ref string, dir bool) (string, error) {
	e := l.Entry
	uri, err := skilluri.Resolve(e.Root, ref)
	if err != nil {
		return "", l.noSuchFile(ref, dir, ReasonOutsideRoot)
	}
	return uri, nil
}

func (l *Loaded) noSuchFile(ref string, dir bool, why Reason) error {
	return &NoSuchFileError{Origin: l.Entry.Origin, Skill: l.Entry.Name, Path: clip(ref), Dir: dir, Reason: why}
}

// unlisted answers a reference inside the root that the manifest does not
// list. It first refreshes the entry, as after a verification failure: when
// the server now publishes a different set, the skill changed under the
// acting window and must be re-approved, which is what the error then says;
// otherwise the reference is a plain mistake of the caller.
func (l *Loaded) unlisted(ctx context.Context, o *originState, ref, uri string) error {
	verr := &VerificationError{Origin: l.Entry.Origin, URI: uri, Reason: ReasonUnlisted}
	l.h.refreshAfterFailure(ctx, o, l.Entry, verr)
	if verr.Changed {
		return verr
	}
	return l.noSuchFile(ref, false, ReasonUnlisted)
}

// ReadFile reads a file of the skill, given relative to the skill root
// ("references/GUIDE.md") or as a URI inside it. For a skill with a
// manifest, only listed files are read; anything else is a
// *NoSuchFileError unless the refresh that follows shows the skill
// changed on the server, which is a *VerificationError asking for
// re-approval. The read goes to the skill's own origin and is verified.
// A nested SKILL.md read this way is ordinary content: its frontmatter has
// no effect.
//
// For a legacy skill the held set is what its server listed on load (for
// SEP-2076 a listed file may also be named by the URI files[] gave); a
// listed file is read on the same origin and returned unverified, and any
// other reference fails like an unlisted file of a manifest, before
// anything is sent to the server.
func (l *Loaded) ReadFile(ctx context.Context, ref string) (*File, error) {
	if err := l.open(); err != nil {
		return nil, err
	}
	e := l.Entry
	if l.held != nil {
		// Listed names are checked paths; matching them first lets a model
		// pass a name as the server wrote it (spaces and all).
		if f, ok, err := l.held.read(ctx, l, ref, ""); ok {
			return f, err
		}
	}
	uri, err := l.resolve(ref, false)
	if err != nil {
		return nil, err
	}
	rel, _ := skilluri.Within(e.Root, uri)
	if uri == e.Root || l.isDir(uri) {
		return nil, fmt.Errorf("%w: %q is a directory of skill %s; list it with list_skill_dir", ErrNotFile, ref, e.Name)
	}
	if e.Kind == KindFilesystem {
		f := e.cat.File(uri)
		if f == nil || !slices.Contains(e.local.Files, f) {
			return nil, l.noSuchFile(ref, false, ReasonUnlisted)
		}
		data, err := e.cat.ReadFile(f)
		if err != nil {
			return nil, err
		}
		return &File{URI: uri, Path: rel, Data: data, MIMEType: f.MIMEType, Verified: true}, nil
	}
	o := l.h.byLabel[e.Origin]
	if l.held != nil {
		if f, ok, err := l.held.read(ctx, l, "", uri); ok {
			return f, err
		}
		// No refresh: such a skill has no entry to fetch by URI.
		return nil, l.noSuchFile(ref, false, ReasonUnlisted)
	}
	if e.Dynamic {
		data, mime, err := l.fetch(ctx, o, uri, nil)
		if err != nil {
			return nil, err
		}
		return &File{URI: uri, Path: rel, Data: data, MIMEType: mime}, nil
	}
	res, ok := e.File(uri)
	if !ok {
		return nil, l.unlisted(ctx, o, ref, uri)
	}
	data, mime, err := l.fetch(ctx, o, uri, &res)
	if err != nil {
		return nil, err
	}
	return &File{URI: uri, Path: rel, Data: data, MIMEType: mime, Verified: true}, nil
}

// isDir reports whether the manifest has files below uri.
func (l *Loaded) isDir(uri string) bool {
	files, _ := l.manifest()
	for _, f := range files {
		if _, ok := skilluri.Within(uri, f.URI); ok {
			return true
		}
	}
	return false
}

// ListDir lists a directory of the skill ("" or "." for the root). For a
// skill with a manifest the answer comes from the held entry alone, so it
// never shows a file the host would refuse to read. For a "dynamic"
// skill it uses resources/directory/read when the server declared
// directoryRead, keeping only direct children of the directory. For a
// legacy skill it comes from the files its server listed on load.
func (l *Loaded) ListDir(ctx context.Context, ref string) ([]DirEntry, error) {
	if err := l.open(); err != nil {
		return nil, err
	}
	e := l.Entry
	dir, err := l.resolve(ref, true)
	if err != nil {
		return nil, err
	}
	if files, ok := l.manifest(); ok {
		if slices.ContainsFunc(files, func(f wire.SkillResource) bool { return f.URI == dir }) {
			return nil, fmt.Errorf("%q is a file of skill %s, not a directory; read it with read_skill_file", ref, e.Name)
		}
		seen := map[string]bool{}
		var out []DirEntry
		for _, f := range files {
			rel, ok := skilluri.Within(dir, f.URI)
			if !ok {
				continue
			}
			first, _, sub := strings.Cut(rel, "/")
			if seen[first] {
				continue
			}
			seen[first] = true
			if sub {
				out = append(out, DirEntry{Name: first, URI: dir + "/" + first, Dir: true, Size: -1})
			} else {
				out = append(out, DirEntry{Name: first, URI: f.URI, Size: f.Size})
			}
		}
		if len(out) == 0 && dir != e.Root {
			return nil, l.noSuchFile(ref, true, ReasonUnlisted)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		for i := range out {
			out[i].Name = unescapeName(out[i].Name)
		}
		return out, nil
	}
	return l.readDirectory(ctx, dir)
}

func unescapeName(s string) string {
	if u, err := skilluri.Parse("x://x/" + s); err == nil && len(u.Segments) == 1 {
		return u.Segments[0]
	}
	return s
}

// readDirectory pages resources/directory/read for a dynamic skill.
func (l *Loaded) readDirectory(ctx context.Context, dir string) ([]DirEntry, error) {
	e := l.Entry
	o := l.h.byLabel[e.Origin]
	o.mu.Lock()
	dr := o.settings.DirectoryRead
	o.mu.Unlock()
	if !dr {
		return nil, fmt.Errorf("%s does not support resources/directory/read, and skill %s has no manifest: its files cannot be listed", e.Origin, e.Name)
	}
	sess, err := o.sess()
	if err != nil {
		return nil, err
	}
	var out []DirEntry
	for c, err := range o.client(sess, 0).ReadDirectory(ctx, dir) {
		var ee *skillclient.EntryError
		switch {
		case errors.As(err, &ee):
			o.diag(Warning, ee.URI, ee.Msg+"; ignored", nil)
			continue
		case errors.Is(err, skillclient.ErrTooManyPages), errors.Is(err, skillclient.ErrRepeatedCursor):
			// What was listed so far is what the host shows.
		case err != nil:
			return nil, fmt.Errorf("%s: %w", e.Origin, err)
		default:
			rel, _ := skilluri.Within(dir, c.URI)
			out = append(out, DirEntry{Name: unescapeName(rel), URI: c.URI, Dir: c.MIMEType == wire.DirectoryMIMEType, Size: -1})
			continue
		}
		break
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ReadResource is the generic, origin-bound resource read a model may be
// given. It reads uri on the origin labelled label, never on a server
// found by searching for the URI. When acting is non-nil and belongs to
// another origin, the read needs an explicit approval naming both servers,
// asked on every call. The result is ordinary resource content: a
// SKILL.md read this way is not a load.
func (h *Host) ReadResource(ctx context.Context, label, uri string, acting *Loaded) (*mcp.ReadResourceResult, error) {
	o := h.byLabel[label]
	if o == nil || o.cfg.Kind() != KindMCP {
		return nil, fmt.Errorf("%w %q", ErrUnknownOrigin, label)
	}
	if _, err := skilluri.Parse(uri); err != nil {
		return nil, err
	}
	if acting != nil && acting.Entry.Origin != label {
		d, err := h.opts.Approver.Approve(ctx, &approval.Request{
			Kind: approval.CrossOrigin, Origin: acting.Entry.Origin, URI: acting.Entry.URI, Name: acting.Entry.Name,
			Target: label, TargetURI: uri,
		})
		if err != nil || !d.Allow {
			return nil, fmt.Errorf("%w: skill %s from %s asked to read %s on %s; that needs your approval for this call", ErrCrossOrigin, acting.Entry.Name, acting.Entry.Origin, uri, label)
		}
	}
	sess, err := o.sess()
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	return sess.ReadResource(callCtx, &mcp.ReadResourceParams{URI: uri})
}

// AuthorizeExec asks the approver whether a code-execution tool call may run
// while the model acts on this skill. Filesystem skills need no
// approval here; MCP skills need it on every call.
func (l *Loaded) AuthorizeExec(ctx context.Context, command string) error {
	if l.Entry.Kind == KindFilesystem {
		return nil
	}
	d, err := l.h.opts.Approver.Approve(ctx, &approval.Request{
		Kind: approval.Exec, Origin: l.Entry.Origin, URI: l.Entry.URI, Name: l.Entry.Name, Target: command,
	})
	if err != nil || !d.Allow {
		return fmt.Errorf("%w: running %q while acting on MCP skill %s from %s", ErrNotApproved, clip(command), l.Entry.Name, l.Entry.Origin)
	}
	return nil
}

// FetchAll reads and verifies every file of e without approval and without
// opening an acting window, for tools a user runs explicitly (skillport
// verify, skillport pull). It stops at the first failure. Files are
// returned in manifest order.
func (h *Host) FetchAll(ctx context.Context, e *Entry) ([]*File, error) {
	e = h.current(e)
	if e.Declined != nil {
		return nil, e.Declined
	}
	if e.Kind == KindFilesystem {
		l := &Loaded{Entry: e, h: h}
		var out []*File
		for _, f := range e.Files {
			rel, _ := skilluri.Within(e.Root, f.URI)
			file, err := l.ReadFile(ctx, rel)
			if err != nil {
				return nil, err
			}
			out = append(out, file)
		}
		return out, nil
	}
	if e.Dynamic {
		return nil, fmt.Errorf("%w: %s: %s is dynamic and cannot be verified", ErrDeclined, e.Origin, e.Name)
	}
	o := h.byLabel[e.Origin]
	l := &Loaded{Entry: e, h: h}
	var out []*File
	// SKILL.md first: if it fails, nothing else of the skill is read.
	files := slices.Clone(e.Files)
	sort.SliceStable(files, func(i, j int) bool { return files[i].URI == e.URI && files[j].URI != e.URI })
	for _, f := range files {
		res := f
		data, mime, err := l.fetch(ctx, o, f.URI, &res)
		if err != nil {
			return nil, err
		}
		rel, _ := skilluri.Within(e.Root, f.URI)
		out = append(out, &File{URI: f.URI, Path: rel, Data: data, MIMEType: mime, Verified: true})
		if f.URI == e.URI {
			if _, err := h.parseSkillMD(ctx, o, e, data); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
