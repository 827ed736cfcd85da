package gateway

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/cache"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/skilluri"
)

// source re-publishes the gateway's skills over the Skills Extension. Each
// skill of origin o at upstream URI scheme://p/SKILL.md is published as
// skill://o/p/SKILL.md, so that two origins' skills never share an
// identity, with the upstream manifest's digests and sizes. Listing reads
// nothing; a file is fetched from its origin and verified by the host when
// a client reads it, through the same acting window (and approval) as the
// tools. Bytes that do not match the published digest are never served.
//
// Skills with "dynamic" resources are not re-published: the gateway could
// not vouch for anything about them.
type source struct {
	g   *Gateway
	cur atomic.Pointer[snapshot]

	buildMu sync.Mutex

	feed published.ChangeFeed

	// binary holds published URIs whose content turned out not to be
	// UTF-8: they are served as blobs from then on.
	binary sync.Map
}

func newSource(g *Gateway) *source {
	s := &source{g: g}
	s.cur.Store(s.build(&view{}))
	return s
}

// Snapshot implements [published.Source].
func (s *source) Snapshot() published.Snapshot { return s.cur.Load() }

// Refresh implements [published.Source]: it rebuilds from the current view,
// unless another caller already replaced stale.
func (s *source) Refresh(_ context.Context, stale published.Snapshot) (published.Snapshot, error) {
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	if cur := s.cur.Load(); published.Snapshot(cur) != stale {
		return cur, nil
	}
	s.swap(s.build(s.g.view.Load()))
	return s.cur.Load(), nil
}

// ListSkills implements [published.Source].
func (s *source) ListSkills(ctx context.Context) ([]*catalog.Skill, error) {
	return published.ListSkills(ctx, s)
}

// ReadFile implements [published.Source].
func (s *source) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	return published.ReadFile(ctx, s, f)
}

// OnChange implements [published.Source].
func (s *source) OnChange(fn func(old, new published.Snapshot)) (cancel func()) {
	return s.feed.OnChange(fn)
}

func (s *source) update(v *view) {
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	s.swap(s.build(v))
}

// swap installs snap and tells the watchers (the extension server, which
// then announces resources/list_changed) if the content differs.
func (s *source) swap(snap *snapshot) {
	old := s.cur.Load()
	if old.ID() == snap.ID() {
		return
	}
	s.cur.Store(snap)
	s.feed.Notify(old, snap)
}

// ref says where a published file comes from.
type ref struct {
	origin   string // origin label
	skill    string // upstream SKILL.md URI of the skill it is read through
	upstream string // upstream file URI
}

// snapshot is one immutable re-publication: [published.NewSnapshot] of the
// re-published skills, and where each file is read from.
type snapshot struct {
	published.Snapshot
	src  *source
	refs map[string]ref
}

// Republished returns the URI under which the gateway re-publishes the
// upstream skill or file uri of origin label: skill://<label>/<path>.
func Republished(label, uri string) string {
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		rest = uri
	}
	return "skill://" + label + "/" + rest
}

func (s *source) build(v *view) *snapshot {
	snap := &snapshot{src: s, refs: map[string]ref{}}
	byURI := map[string]bool{}
	byFile := map[string]*catalog.File{}
	var skills []*catalog.Skill
	for _, e := range v.entries {
		if e.Dynamic || e.Declined != nil {
			continue
		}
		if e.SizesMissing > 0 {
			// Re-publishing needs every size, which only a read would
			// tell; the tools still serve the skill.
			s.g.log.Warn("gateway: the upstream lists files of this skill without sizes; it is not re-published as a resource", "origin", e.Origin, "uri", e.URI)
			continue
		}
		root := Republished(e.Origin, e.Root)
		uri := root + "/" + skilluri.SkillFile
		if byURI[uri] {
			s.g.log.Warn("gateway: two skills of one origin map to the same re-published URI; the second is not re-published", "origin", e.Origin, "uri", e.URI, "as", uri)
			continue
		}
		sk := &catalog.Skill{URI: uri, Root: root, Path: e.Origin + "/" + e.Path, Name: e.Name,
			Dir: e.Origin + "/" + e.Path, Frontmatter: e.Frontmatter, Size: e.Size}
		for _, f := range e.Files {
			rel := skilluri.SkillFile
			if f.URI != e.URI {
				r, ok := skilluri.Within(e.Root, f.URI)
				if !ok {
					continue // the host validated the entry; cannot happen
				}
				rel = r
			}
			fu := root + "/" + rel
			cf := byFile[fu]
			if cf == nil {
				name := decode(path.Base(rel))
				_, binary := s.binary.Load(fu)
				cf = &catalog.File{URI: fu, Path: decode(sk.Path + "/" + rel), Name: name, Size: f.Size, Digest: f.Digest,
					MIMEType: catalog.MIMEType(name, false), Text: (rel == skilluri.SkillFile || catalog.TextType(name)) && !binary}
				byFile[fu] = cf
				snap.refs[fu] = ref{origin: e.Origin, skill: e.URI, upstream: f.URI}
			}
			sk.Files = append(sk.Files, cf)
		}
		slices.SortFunc(sk.Files, func(a, b *catalog.File) int {
			if (a.URI == uri) != (b.URI == uri) {
				if a.URI == uri {
					return -1
				}
				return 1
			}
			return cmp.Compare(a.URI, b.URI)
		})
		skills = append(skills, sk)
		byURI[uri] = true
	}
	snap.Snapshot = published.NewSnapshot(skills, snap.readFile, nil)
	return snap
}

func decode(s string) string {
	if d, err := url.PathUnescape(s); err == nil {
		return d
	}
	return s
}

// readFile reads a file of snap for [published.Snapshot.ReadFile]: it loads the skill the file is
// read through (approval and verification of SKILL.md, once per acting
// window) and reads the file from its origin, verified against the held
// entry. Bytes that do not match f (the upstream skill changed since this
// snapshot) are reported as [catalog.ErrChanged], never returned.
func (snap *snapshot) readFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	r, ok := snap.refs[f.URI]
	if !ok {
		return nil, fmt.Errorf("gateway: %s: %w", f.URI, catalog.ErrNotFound)
	}
	g := snap.src.g
	e := g.view.Load().byKey[key{r.origin, r.skill}]
	if e == nil {
		return nil, fmt.Errorf("gateway: %s: %w", f.URI, catalog.ErrChanged)
	}
	l, err := g.load(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("gateway: %s: %w", f.URI, err)
	}
	data := l.Content
	if r.upstream != l.Entry.URI {
		file, err := l.ReadFile(ctx, r.upstream)
		if err != nil {
			return nil, fmt.Errorf("gateway: %s: %w", f.URI, err)
		}
		data = file.Data
	}
	if int64(len(data)) != f.Size || cache.Digest(data) != f.Digest {
		return nil, fmt.Errorf("gateway: %s: %w", f.URI, catalog.ErrChanged)
	}
	if f.Text && !utf8.Valid(data) {
		snap.src.binary.Store(f.URI, true)
		return nil, fmt.Errorf("gateway: %s is not UTF-8 text: %w", f.URI, catalog.ErrChanged)
	}
	return data, nil
}
