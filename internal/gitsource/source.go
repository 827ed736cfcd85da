// Package gitsource serves skills straight from a git repository: a
// branch, tag or commit of a remote (https, http, ssh, git or file) is
// mirrored under the user cache directory and its commit's tree, not a
// working copy, is built into a [catalog.Catalog] through an fs.FS ([FS]).
// The bytes served are blob bytes and a snapshot is identified by its
// commit.
//
// A tag or commit pin never moves (an installer may ask the remote again
// whether a tag moved: [Options].RecheckTags). A branch is re-resolved by [Source.Watch]
// every poll interval and whenever [Source.Trigger] is called (a webhook);
// a new commit becomes a new catalog built by tree id: subtrees whose ids
// did not change are not read, and only the skills whose folders changed
// are rebuilt and spliced into the previous catalog
// ([catalog.Catalog.ReloadChanged]). A fetch that fails keeps the
// last good commit and says so in the log and in [Source.Status]. The
// implementation is pure Go (go-git): no git binary is needed.
package gitsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/poll"
)

// Defaults for [Options].
const (
	DefaultPoll    = 60 * time.Second
	DefaultTimeout = 5 * time.Minute
)

// Options configure [Open]. The zero value is usable.
type Options struct {
	// CacheDir holds the local mirrors, one bare repository per URL; ""
	// means [DefaultCacheDir]. A mirror makes restarts fast and lets a
	// source start offline from the last fetched commit.
	CacheDir string
	// Credentials authenticate fetches; nil means [CredentialsFromEnv].
	Credentials *Credentials
	// Catalog configures the catalogs built from each commit. When Prefix is
	// empty and the served folder itself holds a SKILL.md, the folder's name
	// (or the repository's) becomes the prefix, as for a directory.
	Catalog *catalog.Options
	// Timeout bounds one fetch; zero means DefaultTimeout.
	Timeout time.Duration
	// Logger receives fetch failures and recoveries; nil means the catalog
	// options' logger, or slog.Default().
	Logger *slog.Logger
	// MaxFetch bounds the bytes one fetch may write to the cache
	// directory (the pack the remote sends); zero means
	// [DefaultMaxFetch]. A fetch past it fails and leaves nothing behind.
	MaxFetch int64
	// RecheckTags asks the remote again for a tag the mirror already holds
	// (one ref advertisement), fetching it only if it moved: for an
	// installer, whose job is to compare with upstream. A server leaves it
	// false, so that a tag it serves never changes under its clients.
	RecheckTags bool
}

// DefaultCacheDir is the mirrors' directory under the user cache directory.
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("gitsource: no user cache directory (%v); set --cache-dir", err)
	}
	return filepath.Join(d, "skillport", "git"), nil
}

// Status is what an operator can query about a source.
type Status struct {
	// Source is the spec, without credentials.
	Source string
	// Ref is the full ref served ("refs/heads/main"), "" for a commit pin.
	Ref string
	// Commit is the commit served.
	Commit string
	// Pinned is set for a tag or commit, which is never re-resolved.
	Pinned bool
	// Checked is when the remote was last reached successfully (zero if
	// never since start).
	Checked time.Time
	// Err is the last fetch's failure, "" when it succeeded: the source
	// then keeps serving Commit, the last good one.
	Err string
	// Since is when fetches started failing.
	Since time.Time
}

// Source is one git source: a mirror, the ref it follows and the catalog
// of the commit it serves. It is safe for concurrent use.
type Source struct {
	spec   Spec
	opts   Options
	log    *slog.Logger
	dir    string
	repo   *git.Repository
	remote *git.Remote
	creds  *Credentials

	update  sync.Mutex               // serialises Update
	objects objectCache              // trees and blob sizes, shared by the commits' FSs
	pools   [2][]*filesystem.Storage // readers of the last two builds
	digests *digestStore             // blob digests kept beside the mirror
	packs   *packReader              // reads the mirror's packs for the FSs
	trigger chan struct{}

	mu     sync.Mutex
	ref    plumbing.ReferenceName
	pinned bool
	cat    *catalog.Catalog
	status Status
}

// ErrUnavailable is wrapped by [Open] when the remote cannot be reached and
// the mirror holds no copy of the ref.
var ErrUnavailable = errors.New("git source unavailable")

// Open mirrors the source's repository (or updates the existing mirror),
// resolves its ref and builds the catalog of that commit. When the remote
// cannot be reached, a mirror that already holds the ref is served and the
// failure is logged and kept in Status; without one, Open fails with an
// error wrapping [ErrUnavailable].
func Open(ctx context.Context, spec Spec, opts *Options) (*Source, error) {
	s := &Source{spec: spec, trigger: make(chan struct{}, 1)}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Timeout <= 0 {
		s.opts.Timeout = DefaultTimeout
	}
	s.log = s.opts.Logger
	if s.log == nil && s.opts.Catalog != nil {
		s.log = s.opts.Catalog.Logger
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.creds = s.opts.Credentials
	if s.creds == nil {
		c := CredentialsFromEnv()
		s.creds = &c
	}
	s.status.Source = spec.String()
	if s.opts.CacheDir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		s.opts.CacheDir = d
	}
	if err := s.openMirror(); err != nil {
		return nil, err
	}
	s.digests = loadDigests(s.dir)
	s.objects.published = s.digests.size
	commit, fetchErr := s.resolve(ctx)
	if fetchErr != nil {
		cached, ok := s.cached()
		if !ok {
			return nil, fmt.Errorf("gitsource: %s: %w: %w; no cached copy in %s", spec, ErrUnavailable, fetchErr, s.dir)
		}
		commit = cached
		s.failed(fetchErr)
	}
	cat, err := s.build(commit, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.cat = cat
	s.status.Commit = commit.String()
	s.status.Ref = string(s.ref)
	s.status.Pinned = s.pinned
	s.mu.Unlock()
	return s, nil
}

// Spec returns the source's spec.
func (s *Source) Spec() Spec { return s.spec }

// Catalog returns the catalog of the commit served.
func (s *Source) Catalog() *catalog.Catalog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cat
}

// Status reports the commit served and the last fetch's outcome.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Ready returns nil while the last fetch succeeded, and otherwise an error
// saying which commit is still served and why the remote failed, for a
// readiness check.
func (s *Source) Ready(context.Context) error {
	st := s.Status()
	if st.Err == "" {
		return nil
	}
	return fmt.Errorf("%s: serving the last good commit %s; fetching has failed since %s: %s",
		st.Source, st.Commit[:12], st.Since.UTC().Format(time.RFC3339), st.Err)
}

// Pinned reports whether the source serves a tag or commit, which never moves.
func (s *Source) Pinned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pinned
}

// Trigger asks [Source.Watch] to re-resolve the branch now (a webhook
// arrived). It never blocks; triggers during a fetch are coalesced.
func (s *Source) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Watch re-resolves a branch every poll interval (zero means DefaultPoll)
// and on [Source.Trigger], until ctx ends, and calls fn with each new
// catalog, from one goroutine. For a pin it only waits for ctx. Failures
// are logged and kept in Status; the last good catalog stays current.
func (s *Source) Watch(ctx context.Context, every time.Duration, fn func(*catalog.Catalog)) {
	if every <= 0 {
		every = DefaultPoll
	}
	// Update logs and keeps its failures (Status).
	poll.Run(ctx, every, s.Pinned(), s.trigger, s.Update, fn, nil)
}

// Update fetches the branch once and, if it moved, builds and returns the
// new commit's catalog with changed set. A pin is not fetched. On failure
// the last good catalog stays current and the error is also logged and
// kept in Status.
func (s *Source) Update(ctx context.Context) (c *catalog.Catalog, changed bool, err error) {
	s.update.Lock()
	defer s.update.Unlock()
	cur := s.Catalog()
	if s.Pinned() {
		return cur, false, nil
	}
	commit, err := s.resolve(ctx)
	if err != nil {
		s.failed(err)
		return cur, false, err
	}
	s.recovered()
	if commit.String() == s.Status().Commit {
		s.objects.dropSmall()
		return cur, false, nil
	}
	next, err := s.build(commit, cur)
	if err != nil {
		s.failed(err)
		return cur, false, err
	}
	s.mu.Lock()
	s.cat = next
	s.status.Commit = commit.String()
	s.status.Ref = string(s.ref)
	s.mu.Unlock()
	s.log.Info("git source moved to a new commit", "source", s.spec.String(), "commit", commit.String(),
		"hashed", next.Stats().Hashed, "reused", next.Stats().Reused)
	return next, true, nil
}

func (s *Source) failed(err error) {
	s.mu.Lock()
	first := s.status.Err == ""
	s.status.Err = err.Error()
	if first {
		s.status.Since = time.Now()
	}
	commit := s.status.Commit
	s.mu.Unlock()
	if commit == "" {
		commit = "(the cached copy)"
	}
	s.log.Warn("git fetch failed; still serving the last good commit", "source", s.spec.String(), "commit", commit, "err", err)
}

func (s *Source) recovered() {
	s.mu.Lock()
	was := s.status.Err
	s.status.Err, s.status.Since, s.status.Checked = "", time.Time{}, time.Now()
	s.mu.Unlock()
	if was != "" {
		s.log.Info("git fetch works again", "source", s.spec.String())
	}
}

// openMirror opens or creates the bare mirror of the source's URL.
func (s *Source) openMirror() error {
	sum := sha256.Sum256([]byte(s.spec.URL))
	s.dir = filepath.Join(s.opts.CacheDir, hex.EncodeToString(sum[:12])+".git")
	dir := osfs.New(s.dir)
	s.packs = newPackReader(s.dir)
	st := &mirrorStorage{Storage: filesystem.NewStorage(dir, cache.NewObjectLRUDefault()), fs: dir, keep: s.objects.setFresh, packs: s.packs, maxFetch: s.opts.MaxFetch}
	var repo *git.Repository
	var err error
	if _, serr := os.Stat(filepath.Join(s.dir, "config")); serr == nil {
		repo, err = git.Open(st, nil)
	} else {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return fmt.Errorf("gitsource: cache directory: %w", err)
		}
		repo, err = git.Init(st, nil)
		if err == nil {
			_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{s.spec.URL}})
		}
	}
	if err != nil {
		return fmt.Errorf("gitsource: mirror %s of %s: %w (delete it to start afresh)", s.dir, s.spec, err)
	}
	s.repo = repo
	s.packs.refresh()
	s.remote, err = repo.Remote("origin")
	if err != nil {
		return fmt.Errorf("gitsource: mirror %s of %s: %w (delete it to start afresh)", s.dir, s.spec, err)
	}
	return nil
}

// readers opens the object stores a commit's FS reads from, one per CPU,
// sharing one cache of decoded objects.
// They keep pack files open and their list fixed (reopening and listing
// packs for every object would cost more than the reads), so each build
// after a fetch gets new ones; those of the build before last are closed.
func (s *Source) readers() chan storer.EncodedObjectStorer {
	n := runtime.GOMAXPROCS(0)
	pool := make(chan storer.EncodedObjectStorer, n)
	var opened []*filesystem.Storage
	shared := cache.NewObjectLRU(64 * cache.MiByte) // safe for concurrent use
	for range n {
		st := filesystem.NewStorageWithOptions(osfs.New(s.dir), shared,
			filesystem.Options{KeepDescriptors: true, ExclusiveAccess: true, LargeObjectThreshold: largeObject})
		opened = append(opened, st)
		pool <- st
	}
	s.mu.Lock()
	old := s.pools[0]
	s.pools = [2][]*filesystem.Storage{s.pools[1], opened}
	s.mu.Unlock()
	for _, st := range old {
		st.Close()
	}
	return pool
}

// largeObject is the size above which blobs are streamed from the pack
// instead of being read into memory.
const largeObject = 1 << 20

// resolve finds the commit to serve, fetching what the mirror lacks.
func (s *Source) resolve(ctx context.Context) (plumbing.Hash, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	if s.spec.IsCommit() {
		s.setRef("", true)
		h := plumbing.NewHash(s.spec.Ref)
		if _, err := object.GetCommit(s.repo.Storer, h); err == nil {
			return h, nil // a pin: no network when the mirror has it
		}
		auth, err := s.auth()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if err := s.fetch(ctx, auth, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"); err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := object.GetCommit(s.repo.Storer, h); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("commit %s is not reachable from any branch or tag of %s", s.spec.Ref, redactURL(s.spec.URL))
		}
		return h, nil
	}
	// A tag already mirrored is a pin: no network either, unless asked to
	// see whether it moved upstream.
	if s.spec.Ref != "" && !s.opts.RecheckTags {
		for _, name := range tagNames(s.spec.Ref) {
			if h, err := s.localCommit(name); err == nil {
				s.setRef(name, true)
				return h, nil
			}
		}
	}
	auth, err := s.auth()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	// A branch named by the spec and resolved before is fetched straight
	// away: one exchange with the remote instead of two. If the remote no
	// longer has it, the full resolution below says so.
	s.mu.Lock()
	known := s.ref
	s.mu.Unlock()
	if s.spec.Ref != "" && known.IsBranch() {
		if err := s.fetch(ctx, auth, "+"+string(known)+":"+string(known)); err == nil {
			return s.localCommit(known)
		}
	}
	refs, err := s.remote.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.IgnorePeeled})
	if err != nil {
		return plumbing.ZeroHash, s.explain(err, auth != nil)
	}
	name, err := s.pick(refs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	pinned := name.IsTag()
	s.setRef(name, pinned)
	// Fetch only when the mirror's ref is not already what the remote has.
	if local, err := s.repo.Reference(name, false); err != nil || local.Hash() != advertised(refs, name) {
		if err := s.fetch(ctx, auth, "+"+string(name)+":"+string(name)); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if s.spec.Ref == "" {
		// Remember the default branch for offline starts.
		_ = s.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, name))
	}
	return s.localCommit(name)
}

func (s *Source) setRef(name plumbing.ReferenceName, pinned bool) {
	s.mu.Lock()
	s.ref, s.pinned = name, pinned
	s.mu.Unlock()
}

// advertised returns the id the remote advertised for name.
func advertised(refs []*plumbing.Reference, name plumbing.ReferenceName) plumbing.Hash {
	for _, r := range refs {
		if r.Name() == name {
			return r.Hash()
		}
	}
	return plumbing.ZeroHash
}

// tagNames and branchNames are the full names REF may stand for.
func tagNames(ref string) []plumbing.ReferenceName {
	if strings.HasPrefix(ref, "refs/tags/") {
		return []plumbing.ReferenceName{plumbing.ReferenceName(ref)}
	}
	if strings.HasPrefix(ref, "refs/") {
		return nil
	}
	return []plumbing.ReferenceName{plumbing.NewTagReferenceName(ref)}
}

func branchNames(ref string) []plumbing.ReferenceName {
	if strings.HasPrefix(ref, "refs/") {
		return []plumbing.ReferenceName{plumbing.ReferenceName(ref)}
	}
	return []plumbing.ReferenceName{plumbing.NewBranchReferenceName(ref)}
}

// pick chooses the advertised ref REF names: a tag first (as git does),
// then a branch; the remote's HEAD when REF is empty.
func (s *Source) pick(refs []*plumbing.Reference) (plumbing.ReferenceName, error) {
	have := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, r := range refs {
		have[r.Name()] = r
	}
	if s.spec.Ref == "" {
		head := have[plumbing.HEAD]
		if head == nil {
			return "", fmt.Errorf("%s advertises no HEAD (an empty repository?); name a branch with @REF", redactURL(s.spec.URL))
		}
		if head.Type() == plumbing.SymbolicReference && have[head.Target()] != nil {
			return head.Target(), nil
		}
		for _, r := range refs {
			if r.Name().IsBranch() && r.Hash() == head.Hash() {
				return r.Name(), nil
			}
		}
		return "", fmt.Errorf("cannot tell which branch HEAD of %s is; name one with @REF", redactURL(s.spec.URL))
	}
	for _, n := range append(tagNames(s.spec.Ref), branchNames(s.spec.Ref)...) {
		if have[n] != nil {
			return n, nil
		}
	}
	return "", fmt.Errorf("%s has no branch or tag %q (deleted or renamed?)", redactURL(s.spec.URL), s.spec.Ref)
}

// fetch updates the mirror with the refspecs, forcing (a force-push
// replaces the branch) and pruning nothing else.
func (s *Source) fetch(ctx context.Context, auth transport.AuthMethod, specs ...string) error {
	rs := make([]config.RefSpec, len(specs))
	for i, sp := range specs {
		rs[i] = config.RefSpec(sp)
	}
	err := s.remote.FetchContext(ctx, &git.FetchOptions{RefSpecs: rs, Auth: auth, Tags: git.NoTags, Force: true})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return s.explain(err, auth != nil)
	}
	return nil
}

// localCommit peels a mirrored ref to its commit.
func (s *Source) localCommit(name plumbing.ReferenceName) (plumbing.Hash, error) {
	ref, err := s.repo.Reference(name, true)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("%s: %w", name, err)
	}
	h := ref.Hash()
	// Objects are asked for by any type: the commits of the packs fetched
	// are answered from memory, where asking for a tag first would miss
	// and reload every pack index.
	for range 8 {
		o, err := s.repo.Storer.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("%s does not point to a commit: %w", name, err)
		}
		switch o.Type() {
		case plumbing.CommitObject:
			return h, nil
		case plumbing.TagObject:
			tag, err := object.DecodeTag(s.repo.Storer, o)
			if err != nil {
				return plumbing.ZeroHash, fmt.Errorf("%s: %w", name, err)
			}
			h = tag.Target
			continue
		}
		return plumbing.ZeroHash, fmt.Errorf("%s points to a %s, not a commit", name, o.Type())
	}
	return plumbing.ZeroHash, fmt.Errorf("%s: tags nested more than 8 deep", name)
}

// cached finds the commit the mirror holds for the ref, for an offline start.
func (s *Source) cached() (plumbing.Hash, bool) {
	if s.spec.IsCommit() {
		return plumbing.ZeroHash, false // checked by resolve already
	}
	var names []plumbing.ReferenceName
	if s.spec.Ref == "" {
		head, err := s.repo.Storer.Reference(plumbing.HEAD)
		if err != nil || head.Type() != plumbing.SymbolicReference {
			return plumbing.ZeroHash, false
		}
		names = []plumbing.ReferenceName{head.Target()}
	} else {
		names = append(tagNames(s.spec.Ref), branchNames(s.spec.Ref)...)
	}
	for _, n := range names {
		if h, err := s.localCommit(n); err == nil {
			s.setRef(n, n.IsTag())
			return h, true
		}
	}
	return plumbing.ZeroHash, false
}

// build makes the catalog of a commit, reusing prev's digests.
func (s *Source) build(commit plumbing.Hash, prev *catalog.Catalog) (*catalog.Catalog, error) {
	s.packs.refresh()
	fsys, err := newFS(s.readers(), s.packs, commit, s.spec.Subdir, &s.objects)
	if err != nil {
		return nil, fmt.Errorf("gitsource: %s: %w", s.spec, err)
	}
	var c *catalog.Catalog
	var changed []string // nil: anything may have changed
	if prev != nil {
		// Only the subtrees whose ids changed are read; the rest of the
		// catalog is the previous one's.
		c, err = nil, errNoDiff
		if old, ok := prev.FS().(*FS); ok {
			var derr error
			if changed, derr = fsys.changedSince(old); derr == nil {
				c, err = prev.ReloadChanged(fsys, changed)
				if changed == nil {
					changed = []string{}
				}
			}
		}
		if err == errNoDiff {
			c, err = prev.ReloadFS(fsys)
		}
	} else {
		o := catalog.Options{}
		if s.opts.Catalog != nil {
			o = *s.opts.Catalog
		}
		if o.Logger == nil {
			o.Logger = s.log
		}
		o.KnownDigests = s.digests.lookup
		if o.Prefix == "" {
			if fi, err := fsys.Stat(catalog.FileNameSKILL); err == nil && fi.Mode().IsRegular() {
				o.Prefix = s.defaultPrefix()
			}
		}
		c, err = catalog.Open(fsys, &o)
	}
	s.objects.dropSmall()
	if err == nil {
		err = fsys.Fault()
	}
	if err != nil {
		return nil, fmt.Errorf("gitsource: %s at %s: %w", s.spec, short(commit), err)
	}
	save := func() {
		if err := s.digests.save(c, changed); err != nil {
			s.log.Warn("cannot keep blob digests beside the mirror; the next start reads every blob", "dir", s.dir, "err", err)
		}
	}
	if prev == nil {
		save()
	} else {
		go save() // off the reload's path; saves are serialised
	}
	return c, nil
}

// errNoDiff says the previous commit's tree could not be compared.
var errNoDiff = errors.New("no tree comparison")

// defaultPrefix names a single skill served from a folder: the folder's
// name, or the repository's without ".git".
func (s *Source) defaultPrefix() string {
	if s.spec.Subdir != "" {
		return path.Base(s.spec.Subdir)
	}
	return strings.TrimSuffix(path.Base(strings.TrimRight(s.spec.URL, "/")), ".git")
}

// explain turns transport errors into messages that say what to do; no
// credential is ever part of them.
func (s *Source) explain(err error, withAuth bool) error {
	where := redactURL(s.spec.URL)
	// The server's own text is left out: it is not ours to print.
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		how := "set SKILLPORT_GIT_TOKEN (https) or add the host to the credentials file (SKILLPORT_GIT_CREDENTIALS)"
		if withAuth {
			how = "the credentials given were refused; check the token (it is not shown here) and its access to the repository"
		}
		sentinel := transport.ErrAuthenticationRequired
		if errors.Is(err, transport.ErrAuthorizationFailed) {
			sentinel = transport.ErrAuthorizationFailed
		}
		return fmt.Errorf("%s: %w: %s", where, sentinel, how)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%s: %w (or the credentials cannot see it)", where, transport.ErrRepositoryNotFound)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return fmt.Errorf("%s: %w: push a commit first", where, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: fetch took longer than %s", where, s.opts.Timeout)
	}
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) {
		if len(ke.Want) > 0 {
			return fmt.Errorf("%s: %w: the server's host key is not the one known_hosts gives for it; the server may be an impostor, or its key changed: check with its operator before replacing the known_hosts line", where, err)
		}
		return fmt.Errorf("%s: %w: the server is not in known_hosts; add its key (ssh-keyscan) after checking its fingerprint", where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

var _ fs.FS = (*FS)(nil)
