package registry

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skillport/skillport/catalog"
)

const scheme = catalog.DefaultScheme + "://"

// snapshot is the registry's current versions at one generation: metadata
// only; content is read by digest through the source's cache.
//
// It is built from the previous snapshot and the skills changed since: an
// unchanged skill keeps its index (files, directories, digest), lookups go
// to the innermost skill owning a URI, and the sorted lists are merged
// rather than sorted again, so that a change costs little more than the
// changed skills, whatever the registry's size.
type snapshot struct {
	src *Source
	gen int64
	at  time.Time // when the generation was committed
	id  string

	byPath map[string]*skillIndex
	prefix map[string]*catalog.Dir // directories above skills
	skills []*catalog.Skill
	files  []*catalog.File
}

// skillIndex is what a snapshot knows of one skill; it never changes once
// built, so snapshots share it.
type skillIndex struct {
	sk     *catalog.Skill
	files  map[string]*catalog.File
	dirs   map[string]*catalog.Dir
	digest [sha256.Size]byte
}

func (s *snapshot) ID() string               { return s.id }
func (s *snapshot) Skills() []*catalog.Skill { return s.skills }
func (s *snapshot) Files() []*catalog.File   { return s.files }

func (s *snapshot) Skill(uri string) *catalog.Skill {
	p, ok := strings.CutSuffix(strings.TrimPrefix(uri, scheme), "/"+catalog.FileNameSKILL)
	if ix := s.byPath[p]; ok && ix != nil && ix.sk.URI == uri {
		return ix.sk
	}
	return nil
}

// owner returns the innermost skill whose root is uri or above it.
func (s *snapshot) owner(uri string) *skillIndex {
	p, ok := strings.CutPrefix(uri, scheme)
	if !ok {
		return nil
	}
	for {
		if ix := s.byPath[p]; ix != nil {
			return ix
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return nil
		}
		p = p[:i]
	}
}

func (s *snapshot) File(uri string) *catalog.File {
	if ix := s.owner(uri); ix != nil {
		return ix.files[uri]
	}
	return nil
}

func (s *snapshot) Dir(uri string) *catalog.Dir {
	if d := s.prefix[uri]; d != nil {
		return d
	}
	if ix := s.owner(uri); ix != nil {
		return ix.dirs[uri]
	}
	return nil
}

func (s *snapshot) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	if f == nil {
		return nil, fmt.Errorf("registry: %w", catalog.ErrNotFound)
	}
	if g := s.File(f.URI); g == nil || g.Digest != f.Digest || g.Size != f.Size {
		return nil, fmt.Errorf("registry: %s: %w", f.URI, catalog.ErrNotFound)
	}
	return s.src.content(ctx, f)
}

// row is one skill changed since a generation, as loaded from the
// database; a nil manifest means the skill is no longer served.
type row struct {
	path     string
	manifest []byte
	review   string // the version's review state
}

// buildSnapshot applies rows to base (nil for a full load).
func buildSnapshot(src *Source, gen int64, at time.Time, base *snapshot, rows []row) (*snapshot, error) {
	s := &snapshot{src: src, gen: gen, at: at}
	if base == nil {
		base = &snapshot{}
	}
	s.byPath = make(map[string]*skillIndex, len(base.byPath)+len(rows))
	for p, ix := range base.byPath {
		s.byPath[p] = ix
	}
	setChanged := false // a skill added or removed: the prefix levels change
	var added []*skillIndex
	changed := map[string]bool{}
	for _, r := range rows {
		changed[r.path] = true
		if r.manifest == nil {
			if s.byPath[r.path] != nil {
				delete(s.byPath, r.path)
				setChanged = true
			}
			continue
		}
		ix, err := indexSkill(r)
		if err != nil {
			return nil, err
		}
		if s.byPath[r.path] == nil {
			setChanged = true
		}
		s.byPath[r.path] = ix
		added = append(added, ix)
	}

	// Skills: the unchanged ones in their order, merged with the new.
	slices.SortFunc(added, func(a, b *skillIndex) int { return cmp.Compare(a.sk.URI, b.sk.URI) })
	kept := make([]*catalog.Skill, 0, len(s.byPath))
	for _, sk := range base.skills {
		if !changed[sk.Path] {
			kept = append(kept, sk)
		}
	}
	news := make([]*catalog.Skill, len(added))
	for i, ix := range added {
		news[i] = ix.sk
	}
	s.skills = merge(kept, news, func(a, b *catalog.Skill) int { return cmp.Compare(a.URI, b.URI) })

	// Files: each URI once, from its innermost skill.
	keptFiles := make([]*catalog.File, 0, len(base.files))
	for _, f := range base.files {
		if s.File(f.URI) == f {
			keptFiles = append(keptFiles, f)
		}
	}
	var newFiles []*catalog.File
	for _, ix := range added {
		for _, f := range ix.sk.Files {
			// Files owned by an unchanged skill are among keptFiles already.
			if o := s.owner(f.URI); o != nil && changed[o.sk.Path] {
				newFiles = append(newFiles, o.files[f.URI])
			}
		}
	}
	slices.SortFunc(newFiles, func(a, b *catalog.File) int { return cmp.Compare(a.URI, b.URI) })
	newFiles = slices.CompactFunc(newFiles, func(a, b *catalog.File) bool { return a.URI == b.URI })
	s.files = merge(keptFiles, newFiles, func(a, b *catalog.File) int { return cmp.Compare(a.URI, b.URI) })

	if setChanged || base.prefix == nil {
		s.prefix = prefixDirs(s.skills, s.byPath)
	} else {
		s.prefix = base.prefix
	}
	h := sha256.New()
	for _, sk := range s.skills {
		d := s.byPath[sk.Path].digest
		h.Write(d[:])
	}
	s.id = "registry-" + hex.EncodeToString(h.Sum(nil))[:32]
	return s, nil
}

// merge merges two sorted lists.
func merge[T any](a, b []T, cmp func(x, y T) int) []T {
	if len(b) == 0 {
		return a
	}
	out := make([]T, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if cmp(a[i], b[j]) <= 0 {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// indexSkill parses one version's manifest into a skill, its files, its
// directories (all owned by it) and its digest.
func indexSkill(r row) (*skillIndex, error) {
	var m manifest
	if err := json.Unmarshal(r.manifest, &m); err != nil {
		return nil, fmt.Errorf("registry: the manifest of %s: %w", r.path, err)
	}
	sk := &catalog.Skill{URI: scheme + r.path + "/" + catalog.FileNameSKILL, Root: scheme + r.path, Path: r.path, Dir: r.path}
	if err := json.Unmarshal(m.Frontmatter, &sk.Frontmatter); err != nil {
		return nil, fmt.Errorf("registry: the frontmatter of %s: %w", r.path, err)
	}
	sk.Name = sk.Frontmatter.Name()
	if r.review == StatePending {
		// Served before review (observe mode): entries say so, and the
		// snapshot changes when a reviewer decides.
		sk.Review = StatePending
	}
	ix := &skillIndex{sk: sk, files: make(map[string]*catalog.File, len(m.Files)), dirs: map[string]*catalog.Dir{}}
	h := sha256.New()
	h.Write([]byte(sk.URI))
	h.Write([]byte{0})
	h.Write(sk.Frontmatter.JSON())
	h.Write([]byte(sk.Review))
	for _, mf := range m.Files {
		f := &catalog.File{URI: sk.Root + "/" + mf.Rel, Path: r.path + "/" + mf.Rel, Name: mf.Name, Size: mf.Size, Digest: mf.Digest, MIMEType: mf.MIME, Text: mf.Text}
		sk.Files = append(sk.Files, f)
		sk.Size += f.Size
		ix.files[f.URI] = f
		h.Write([]byte("\t" + f.URI + "\x00" + f.Digest + strconv.FormatInt(f.Size, 10)))
	}
	h.Sum(ix.digest[:0])
	dir := func(uri string) *catalog.Dir {
		d := ix.dirs[uri]
		if d == nil {
			d = &catalog.Dir{URI: uri, Path: strings.TrimPrefix(uri, scheme), Skill: sk}
			ix.dirs[uri] = d
		}
		return d
	}
	dir(sk.Root)
	seen := map[string]bool{}
	for _, f := range sk.Files {
		parent := sk.Root
		segs := strings.Split(strings.TrimPrefix(f.URI, sk.Root+"/"), "/")
		for i, seg := range segs {
			uri := parent + "/" + seg
			if !seen[uri] {
				seen[uri] = true
				c := catalog.Child{URI: uri, Name: seg}
				if i == len(segs)-1 {
					c.Name, c.File = f.Name, f
				} else {
					dir(uri)
				}
				d := dir(parent)
				d.Children = append(d.Children, c)
			}
			parent = uri
		}
	}
	for _, d := range ix.dirs {
		slices.SortFunc(d.Children, func(a, b catalog.Child) int { return cmp.Compare(a.Name, b.Name) })
	}
	return ix, nil
}

// prefixDirs builds the directories above skills.
func prefixDirs(skills []*catalog.Skill, byPath map[string]*skillIndex) map[string]*catalog.Dir {
	children := map[string]map[string]catalog.Child{}
	for _, sk := range skills {
		segs := strings.Split(sk.Path, "/")
		for i := len(segs) - 1; i >= 1; i-- {
			p := strings.Join(segs[:i], "/")
			if inside(p, byPath) {
				break // inside a skill: its files list the children
			}
			cs := children[p]
			if cs == nil {
				cs = map[string]catalog.Child{}
				children[p] = cs
			}
			cs[segs[i]] = catalog.Child{URI: scheme + strings.Join(segs[:i+1], "/"), Name: segs[i]}
		}
	}
	out := make(map[string]*catalog.Dir, len(children))
	for p, cs := range children {
		d := &catalog.Dir{URI: scheme + p, Path: p, Children: make([]catalog.Child, 0, len(cs))}
		for _, c := range cs {
			d.Children = append(d.Children, c)
		}
		slices.SortFunc(d.Children, func(a, b catalog.Child) int { return cmp.Compare(a.Name, b.Name) })
		out[d.URI] = d
	}
	return out
}

// inside reports whether skill path p is a skill or lies within one.
func inside(p string, byPath map[string]*skillIndex) bool {
	for {
		if byPath[p] != nil {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}
