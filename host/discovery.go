package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/wire"
)

// maxDiagsPerOrigin bounds what one hostile listing can make the host keep.
const maxDiagsPerOrigin = 100

// originState is one origin at run time.
type originState struct {
	h     *Host
	cfg   Origin
	order int

	mu       sync.Mutex
	session  *mcp.ClientSession
	settings wire.Settings
	profile  string // "" for the Skills Extension, else a compatibility profile (hook.go)
	protocol string // the negotiated protocol revision
	status   OriginStatus
	listing  []*Entry          // last good listing, in server order
	got      map[string]*Entry // entries confirmed by skills/get, by URI
	diags    []Diagnostic
	dropped  int
	expires  time.Time
	fetched  int64
	cat      *catalog.Catalog

	refreshMu  sync.Mutex
	lastList   time.Time
	refreshing bool
	timer      *time.Timer
}

func (o *originState) diag(sev Severity, uri, msg string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.diagLocked(sev, uri, msg, err)
}

// deviation records a warning about a server deviation the host works
// around (see [Diagnostic.Deviation]).
func (o *originState) deviation(uri, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(o.diags)
	o.diagLocked(Warning, uri, msg, nil)
	if len(o.diags) == n+1 && n < maxDiagsPerOrigin {
		o.diags[n].Deviation = true
	}
}

// openSource connects to a git or OCI origin through Options.OpenGit or
// Options.OpenOCI.
func (o *originState) openSource(ctx context.Context) (mcp.Transport, error) {
	open, spec, kind, field := o.h.opts.OpenGit, o.cfg.Git, "git", "OpenGit"
	if o.cfg.OCI != "" {
		open, spec, kind, field = o.h.opts.OpenOCI, o.cfg.OCI, "OCI", "OpenOCI"
	}
	if open == nil {
		return nil, fmt.Errorf("%w: %s: this host cannot read %s sources (host.Options.%s is not set)", ErrUnavailable, spec, kind, field)
	}
	t, warnings, err := open(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	for _, w := range warnings {
		o.diag(Warning, "", w, nil)
	}
	return t, nil
}

// refuse records an entry the server listed that the host left out: a
// diagnostic marked Refused, counted in the origin's status.
func (o *originState) refuse(d Diagnostic) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.status.Refused++
	d.Refused = true
	o.addLocked(d)
}

func (o *originState) diagLocked(sev Severity, uri, msg string, err error) {
	o.addLocked(Diagnostic{Origin: o.cfg.Label, URI: uri, Severity: sev, Message: msg, Err: err})
}

func (o *originState) addLocked(d Diagnostic) {
	sev, msg, uri := d.Severity, d.Message, d.URI
	if len(o.diags) >= maxDiagsPerOrigin {
		o.dropped++
		if len(o.diags) == maxDiagsPerOrigin {
			o.diags = append(o.diags, Diagnostic{Origin: o.cfg.Label, Severity: Warning, Message: "further diagnostics left out"})
		}
		return
	}
	o.diags = append(o.diags, d)
	lvl := o.h.log.Warn
	if sev == Error {
		lvl = o.h.log.Error
	}
	lvl("skills: "+msg, "origin", o.cfg.Label, "uri", uri)
}

func (o *originState) statusCopy() OriginStatus {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.status
	s.Label, s.Kind, s.Where = o.cfg.Label, o.cfg.Kind(), o.cfg.Where()
	return s
}

// snapshot returns the origin's entries: its listing, plus entries confirmed
// by skills/get that the listing lacks.
func (o *originState) snapshot() []*Entry {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.Clone(o.listing)
	seen := make(map[string]bool, len(out))
	for _, e := range out {
		seen[e.URI] = true
	}
	for _, e := range o.got {
		if !seen[e.URI] {
			out = append(out, e)
		}
	}
	return out
}

func (o *originState) start(ctx context.Context) {
	began := time.Now()
	defer func() {
		o.mu.Lock()
		o.status.Discovery = time.Since(began)
		o.mu.Unlock()
	}()
	if o.cfg.Kind() == KindFilesystem {
		o.openDir()
		return
	}
	finished, err := o.connect(ctx, func() { o.relist(ctx) })
	if err != nil {
		o.mu.Lock()
		o.status.Err = err
		if errors.Is(err, ErrNoSkills) {
			// A tool server: nothing is wrong, there is just nothing here.
			o.h.log.Info("skills: the server serves no skills (it does not declare the Skills extension)", "origin", o.cfg.Label)
		} else {
			o.diagLocked(Error, "", err.Error(), err)
		}
		o.mu.Unlock()
		return
	}
	<-finished
}

// connect connects and initializes the session, then has the goroutine
// that connected run then (the first listing) and close finished. One
// goroutine does both so that its stack, grown deep by the SDK's
// connecting, serves the listing too: growing a second goroutine's stack
// as deep cost a host more than a bare client. The caller's goroutine
// only waits, and gives up on Connect at the call timeout.
func (o *originState) connect(ctx context.Context, then func()) (_ <-chan struct{}, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.h.opts.CallTimeout)
	defer cancel()
	client := newClient(o.h, o)
	var rec *httpRecorder
	if o.cfg.URL != "" && o.cfg.Transport == nil {
		rec = &httpRecorder{}
	}
	inner := o.cfg.transport(o.h.opts.ServerStderr, rec)
	if o.cfg.Git != "" || o.cfg.OCI != "" {
		if inner, err = o.openSource(ctx); err != nil {
			return nil, err
		}
	}
	gt := &guardedTransport{inner: inner, changed: o.scheduleRefresh}
	defer gt.settle()
	type result struct {
		s   *mcp.ClientSession
		err error
	}
	done := make(chan result, 1)
	// next is what the goroutine runs once Connect returned: then if the
	// origin is usable, else nothing. Sent exactly once, when connect
	// returns, so that the goroutine starts listing only after the
	// session is set up here.
	next := make(chan func(), 1)
	var run func()
	defer func() { next <- run }()
	fin := make(chan struct{})
	go func() {
		defer close(fin)
		s, err := client.Connect(ctx, gt, nil)
		done <- result{s, err}
		if f := <-next; f != nil {
			f()
		}
	}()
	var sess *mcp.ClientSession
	select {
	case r := <-done:
		sess, err = r.s, r.err
	case <-ctx.Done():
		// The SDK's writes do not watch the context: a peer that never reads
		// would hold Connect forever. Closing the connection frees it.
		gt.close()
		err = ctx.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %s did not complete initialization within %v (%w)%s", ErrUnavailable, o.cfg.Where(), o.h.opts.CallTimeout, context.DeadlineExceeded, processReport(gt.inner, 0))
		}
		// A refusal the OAuth handler took on is explained by its own error
		// (which says how to sign in).
		if he := rec.explain(o.cfg.URL); he != nil && (o.cfg.OAuth == nil || he.Status != http.StatusUnauthorized) {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, he)
		}
		return nil, fmt.Errorf("%w: connecting to %s: %v%s", ErrUnavailable, o.cfg.Where(), err, processReport(gt.inner, time.Second))
	}
	init := sess.InitializeResult()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.session = sess
	o.status.Connected = true
	if init != nil {
		o.protocol = init.ProtocolVersion
	}
	if init != nil && init.ServerInfo != nil {
		o.status.ReportedName = init.ServerInfo.Name
		o.status.ReportedVersion = init.ServerInfo.Version
	}
	var caps *mcp.ServerCapabilities
	if init != nil {
		caps = init.Capabilities
	}
	settings, ok := declaration(caps)
	if !ok {
		// Without the extension, a compatibility profile (hook.go).
		if compatProfiles != nil {
			if p := compatProfiles.pick(gt.wrapped(), caps); p != "" {
				o.profile, o.status.Profile = p, p
				run = then
				return fin, nil
			}
		}
		return nil, fmt.Errorf("%w: %w (%s)", ErrUnavailable, ErrNoSkills, wire.ExtensionID)
	}
	o.status.Declared = true
	if caps.Resources == nil {
		return nil, fmt.Errorf("%w: the server %v", ErrUnavailable, errNoResources)
	}
	o.settings = settings
	o.status.DirectoryRead = settings.DirectoryRead
	run = then
	return fin, nil
}

func (o *originState) close() error {
	o.mu.Lock()
	s := o.session
	o.session = nil
	o.mu.Unlock()
	o.refreshMu.Lock()
	if o.timer != nil {
		o.timer.Stop()
	}
	o.refreshMu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}

// sess returns the session if the origin is usable.
func (o *originState) sess() (*mcp.ClientSession, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.session == nil || o.status.Err != nil {
		err := o.status.Err
		if err == nil {
			err = fmt.Errorf("%w: %s is not connected", ErrUnavailable, o.cfg.Label)
		}
		return nil, err
	}
	return o.session, nil
}

// maxListRestarts bounds how often one listing starts over because the
// server's skills changed between its pages: a server that changes faster than
// it can be listed gets a partial listing, not an endless loop.
const maxListRestarts = 3

// client is the skillclient over the origin's session, bounded by the
// host's options: every listing, directory and read of the host goes
// through it.
func (o *originState) client(sess *mcp.ClientSession, restarts int) *skillclient.Client {
	opts := &o.h.opts
	return skillclient.New(sess, &skillclient.Options{MaxPages: opts.MaxPages, CallTimeout: opts.CallTimeout, Restarts: restarts})
}

// relist pages through skills/list and replaces the listing. A listing that
// fails on its first page keeps the previous one.
func (o *originState) relist(ctx context.Context) {
	sess, err := o.sess()
	if err != nil {
		return
	}
	o.refreshMu.Lock()
	o.lastList = time.Now()
	o.refreshMu.Unlock()
	// The refused entries are those of the listing that follows: their
	// diagnostics go with the count, or a re-listing reports each twice.
	o.mu.Lock()
	o.status.Refused = 0
	o.diags = slices.DeleteFunc(o.diags, func(d Diagnostic) bool { return d.Refused })
	o.mu.Unlock()
	if o.profile != "" && compatProfiles != nil {
		o.relistProfile(ctx, sess)
		return
	}

	opts := &o.h.opts
	var (
		entries []*Entry
		seen    = map[string]bool{}
		items   int
		pages   int
		partial bool
		ttl     = int64(-1)
	)
	capped := func() {
		o.diag(Warning, "", fmt.Sprintf("listing capped at %d entries; it is partial, and skills beyond it can still be loaded by URI", opts.MaxEntries), nil)
		partial = true
	}
	for res, err := range o.client(sess, maxListRestarts).ListPages(ctx) {
		if err != nil {
			var pe *skillclient.PageError
			errors.As(err, &pe)
			switch {
			case errors.Is(err, skillclient.ErrRestarted):
				// Pages of two snapshots must not be mixed.
				o.diag(Warning, "", fmt.Sprintf("skills/list page %d: the server refused the cursor (its skills changed while listing); listing again from the start", pe.Page), err)
				entries, seen, items, pages, ttl = nil, map[string]bool{}, 0, 0, -1
				continue
			case errors.Is(err, skillclient.ErrTooManyPages):
				o.diag(Warning, "", fmt.Sprintf("listing stopped after %d pages; it is partial, and skills beyond it can still be loaded by URI", opts.MaxPages), nil)
			case errors.Is(err, skillclient.ErrRepeatedCursor):
				o.diag(Warning, "", fmt.Sprintf("skills/list returned a cursor it had already returned (page %d); listing stopped, it is partial", pe.Page), nil)
			default:
				msg := fmt.Sprintf("skills/list page %d failed: %v", pe.Page, pe.Err)
				if pe.TimedOut {
					msg = fmt.Sprintf("skills/list page %d got no answer within %v", pe.Page, opts.CallTimeout)
				}
				if pe.Page == 1 {
					o.mu.Lock()
					if o.listing == nil {
						o.status.Err = fmt.Errorf("%w: %s", ErrUnavailable, msg)
					}
					o.diagLocked(Error, "", msg, pe.Err)
					o.mu.Unlock()
					return
				}
				o.diag(Warning, "", msg+fmt.Sprintf("; keeping the %d entries of earlier pages", len(entries)), pe.Err)
			}
			partial = true
			break
		}
		pages++
		if !o.checkResult(res.ResultType, res.TTLMs, res.CacheScope, "skills/list") || res.Skills == nil {
			if res.Skills == nil {
				o.diag(Warning, "", fmt.Sprintf("skills/list page %d has no skills array; listing stopped", pages), nil)
			}
			partial = true
			break
		}
		if res.TTLMs != nil && (ttl < 0 || *res.TTLMs < ttl) {
			ttl = *res.TTLMs
		}
		for _, raw := range res.Skills {
			if items >= opts.MaxEntries {
				capped()
				break
			}
			items++
			e, err := DecodeEntry(o.cfg.Label, raw)
			if err != nil {
				o.refuse(Diagnostic{Origin: o.cfg.Label, Severity: Warning, URI: entryURI(err), Message: "entry left out: " + entryMsg(err), Err: err})
				continue
			}
			if seen[e.URI] {
				o.diag(Warning, e.URI, "listed twice; the first entry is kept", nil)
				continue
			}
			seen[e.URI] = true
			o.ingest(e)
			entries = append(entries, e)
		}
		if partial {
			break
		}
		if res.NextCursor != "" && items >= opts.MaxEntries {
			capped()
			break
		}
	}
	if ttl < 0 {
		ttl = 0
	}
	entries = o.trust(entries)
	o.mu.Lock()
	o.listing = entries
	o.status.Err = nil
	o.status.Skills = len(entries)
	o.status.Partial = partial
	o.status.Listed = time.Now()
	o.expires = time.Now().Add(time.Duration(ttl) * time.Millisecond)
	for _, e := range entries {
		e.expires = o.expires
	}
	o.mu.Unlock()
}

func entryURI(err error) string {
	var ee *EntryError
	if errors.As(err, &ee) {
		return ee.URI
	}
	return ""
}

func entryMsg(err error) string {
	var ee *EntryError
	if errors.As(err, &ee) {
		return ee.Msg
	}
	return err.Error()
}

// resultFieldsFrom is the first protocol revision whose results must carry
// resultType, ttlMs and cacheScope; earlier sessions' results do not.
const resultFieldsFrom = "2026-07-28"

// checkResult checks the fields every result must carry: in a session of a
// revision that requires them, a missing resultType, ttlMs or cacheScope
// is accepted with a diagnostic; a resultType other than "complete" is
// not parsed as skills, in any revision.
func (o *originState) checkResult(rt *string, ttl *int64, scope *string, method string) bool {
	o.mu.Lock()
	rev := o.protocol
	o.mu.Unlock()
	required := rev >= resultFieldsFrom // revisions are dates: they compare as strings
	switch {
	case rt == nil:
		if required {
			o.diag(Warning, "", fmt.Sprintf("%s result has no resultType (required in %s sessions; servers must send \"complete\"); accepted", method, rev), nil)
		}
	case *rt != wire.ResultComplete:
		o.diag(Error, "", fmt.Sprintf("%s result has resultType %q; only \"complete\" carries skills, so it was not used", method, clip(*rt)), nil)
		return false
	}
	if required && (ttl == nil || *ttl < 0) {
		o.diag(Warning, "", fmt.Sprintf("%s result has no valid ttlMs (required in %s sessions); treated as 0", method, rev), nil)
	}
	if required && scope == nil {
		o.diag(Warning, "", fmt.Sprintf("%s result has no cacheScope (required in %s sessions); treated as \"private\"", method, rev), nil)
	}
	return true
}

// ingest applies host policy to a freshly received entry: "dynamic" skills
// are declined unless allowed, and persisted approvals bound to another
// resources set are revoked.
func (o *originState) ingest(e *Entry) {
	if e.Dynamic && !o.h.opts.AllowDynamic && e.Declined == nil {
		e.Declined = &EntryError{Origin: e.Origin, URI: e.URI, Err: ErrDeclined,
			Msg: `resources is "dynamic": the content cannot be verified, and this host does not load such skills`}
	}
	for _, w := range e.Warnings {
		o.diag(Warning, e.URI, w, nil)
	}
	if e.SizesMissing > 0 {
		w := fmt.Sprintf("server deviates from the Skills extension: %d of %d resources have no size; "+
			"accepted: each such file is read within the 16 MiB per-skill limit and verified by its digest", e.SizesMissing, len(e.Files))
		e.Warnings = append(e.Warnings, w)
		o.deviation(e.URI, w)
	}
	if f := descriptionFlags(e); f != "" {
		e.Warnings = append(e.Warnings, "description contains "+f+" (removed for display)")
		o.diag(Warning, e.URI, "description contains "+f+"; they are removed before it reaches the model", nil)
	}
	current := func() string {
		if e.Dynamic {
			return ""
		}
		return approval.Key(e.Origin, e.URI, e.Files)
	}
	if n, err := o.h.opts.Approvals.RevokeStale(e.Origin, e.URI, current); err != nil {
		o.diag(Warning, e.URI, "could not revoke a stale approval: "+err.Error(), err)
	} else if n > 0 {
		o.diag(Warning, e.URI, "the skill's files changed since it was approved; the approval was revoked and loading it will ask again", nil)
	}
}

// get calls skills/get for uri and records the entry.
func (o *originState) get(ctx context.Context, uri string) (*Entry, error) {
	if _, err := skilluri.ParseSkill(uri); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnknownSkill, err)
	}
	sess, err := o.sess()
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, o.h.opts.CallTimeout)
	defer cancel()
	res, err := mcp.CallCustomMethod[*wire.GetSkillParams, *getResult](callCtx, sess, wire.MethodGetSkill, &wire.GetSkillParams{URI: uri})
	if err != nil {
		if callCtx.Err() != nil {
			return nil, fmt.Errorf("%w: %s: skills/get %s got no answer within %v", ErrUnavailable, o.cfg.Label, uri, o.h.opts.CallTimeout)
		}
		return nil, fmt.Errorf("%w: %s: skills/get %s: %v", ErrUnknownSkill, o.cfg.Label, uri, err)
	}
	if !o.checkResult(res.ResultType, res.TTLMs, res.CacheScope, "skills/get") {
		return nil, fmt.Errorf("%w: %s: skills/get %s: unusable result", ErrInvalidEntry, o.cfg.Label, uri)
	}
	e, err := DecodeEntry(o.cfg.Label, res.Skill)
	if err != nil {
		return nil, err
	}
	if e.URI != uri {
		return nil, &EntryError{Origin: o.cfg.Label, URI: uri, Err: ErrInvalidEntry,
			Msg: fmt.Sprintf("skills/get answered with a different skill, %q; entry does not match requested URI", clip(e.URI))}
	}
	if _, err := o.trustErr([]*Entry{e}); err != nil {
		return nil, err
	}
	o.ingest(e)
	var ttl int64
	if res.TTLMs != nil && *res.TTLMs > 0 {
		ttl = *res.TTLMs
	}
	e.expires = time.Now().Add(time.Duration(ttl) * time.Millisecond)
	o.mu.Lock()
	if o.got == nil {
		o.got = map[string]*Entry{}
	}
	o.got[uri] = e
	for i, l := range o.listing {
		if l.URI == uri {
			o.listing = slices.Clone(o.listing)
			o.listing[i] = e
		}
	}
	o.mu.Unlock()
	return e, nil
}

// scheduleRefresh re-lists the server after notifications/resources/list_changed
// (or a legacy server's notifications/skills/list_changed),
// at most once per RefreshInterval however many notifications arrive.
// Refreshing never fetches files and never prompts.
func (o *originState) scheduleRefresh() {
	o.refreshMu.Lock()
	defer o.refreshMu.Unlock()
	if o.timer != nil || o.refreshing {
		return
	}
	wait := time.Until(o.lastList.Add(o.h.opts.RefreshInterval))
	if wait < 0 {
		wait = 0
	}
	o.timer = time.AfterFunc(wait, func() {
		o.refreshMu.Lock()
		o.timer = nil
		o.refreshing = true
		o.refreshMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.h.opts.MaxPages+1)*o.h.opts.CallTimeout)
		o.relist(ctx)
		cancel()
		o.refreshMu.Lock()
		o.refreshing = false
		o.refreshMu.Unlock()
		o.h.mu.RLock()
		closed := o.h.closed
		o.h.mu.RUnlock()
		if !closed {
			o.h.rebuild()
		}
	})
}

// relistProfile lists an origin through its compatibility profile
// (hook.go).
func (o *originState) relistProfile(ctx context.Context, sess *mcp.ClientSession) {
	entries, err := compatProfiles.list(ctx, o, sess)
	if err == nil {
		entries = o.trust(entries)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		if o.listing == nil {
			o.status.Err = fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		o.diagLocked(Error, "", err.Error(), err)
		return
	}
	o.listing = entries
	o.status.Err = nil
	o.status.Skills = len(entries)
	o.status.Listed = time.Now()
	// Nothing here carries a ttl; entries are re-listed on demand.
	o.expires = o.status.Listed
	for _, e := range entries {
		e.expires = o.expires
	}
}
