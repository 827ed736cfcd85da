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

// snapshot is the registry's current versions at one generation: metadata
// only; content is read by digest through the source's cache.
type snapshot struct {
	src   *Source
	gen   int64
	at    time.Time // when the generation was committed
	id    string
	bytes int64

	byPath map[string]*catalog.Skill
	own    map[string][]*catalog.Dir // each skill's directories, by skill path
	skills []*catalog.Skill
	byURI  map[string]*catalog.Skill
	files  []*catalog.File
	fileBy map[string]*catalog.File
	dirs   map[string]*catalog.Dir
}

func (s *snapshot) ID() string                      { return s.id }
func (s *snapshot) Skills() []*catalog.Skill        { return s.skills }
func (s *snapshot) Skill(uri string) *catalog.Skill { return s.byURI[uri] }
func (s *snapshot) Files() []*catalog.File          { return s.files }
func (s *snapshot) File(uri string) *catalog.File   { return s.fileBy[uri] }
func (s *snapshot) Dir(uri string) *catalog.Dir     { return s.dirs[uri] }
func (s *snapshot) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	if f == nil || s.fileBy[f.URI] != f {
		return nil, fmt.Errorf("registry: %w", catalog.ErrNotFound)
	}
	return s.src.content(ctx, f)
}

// row is one skill changed since a generation, as loaded from the
// database; a nil manifest means the skill is no longer served.
type row struct {
	path     string
	manifest []byte
}

// buildSnapshot applies rows to the skills of base (nil for a full load)
// and builds the snapshot: unchanged skills are reused as they are, so a
// change costs the changed skills' manifests plus in-memory indexing.
// Files with the same URI (a nested skill's, listed by its parent too) are
// one *File.
func buildSnapshot(src *Source, gen int64, at time.Time, base *snapshot, rows []row) (*snapshot, error) {
	const scheme = catalog.DefaultScheme + "://"
	byPath := map[string]*catalog.Skill{}
	if base != nil {
		byPath = make(map[string]*catalog.Skill, len(base.byPath)+len(rows))
		for p, sk := range base.byPath {
			byPath[p] = sk
		}
	}
	for _, r := range rows {
		if r.manifest == nil {
			delete(byPath, r.path)
			continue
		}
		var m manifest
		if err := json.Unmarshal(r.manifest, &m); err != nil {
			return nil, fmt.Errorf("registry: the manifest of %s: %w", r.path, err)
		}
		sk := &catalog.Skill{URI: scheme + r.path + "/" + catalog.FileNameSKILL, Root: scheme + r.path, Path: r.path, Dir: r.path}
		if err := json.Unmarshal(m.Frontmatter, &sk.Frontmatter); err != nil {
			return nil, fmt.Errorf("registry: the frontmatter of %s: %w", r.path, err)
		}
		sk.Name = sk.Frontmatter.Name()
		for _, mf := range m.Files {
			f := &catalog.File{URI: sk.Root + "/" + mf.Rel, Path: r.path + "/" + mf.Rel, Name: mf.Name, Size: mf.Size, Digest: mf.Digest, MIMEType: mf.MIME, Text: mf.Text}
			sk.Files = append(sk.Files, f)
			sk.Size += f.Size
		}
		byPath[r.path] = sk
	}
	s := &snapshot{src: src, gen: gen, at: at, byPath: byPath, byURI: make(map[string]*catalog.Skill, len(byPath)),
		fileBy: make(map[string]*catalog.File, len(byPath)*4), dirs: make(map[string]*catalog.Dir, len(byPath)*3)}
	s.skills = make([]*catalog.Skill, 0, len(byPath))
	for _, sk := range byPath {
		s.skills = append(s.skills, sk)
	}
	slices.SortFunc(s.skills, func(a, b *catalog.Skill) int { return cmp.Compare(a.URI, b.URI) })
	for j, sk := range s.skills {
		// A file listed by a skill and its nested skill is one *File; the
		// skill is copied rather than changed, since an older snapshot
		// being served may share it.
		if slices.ContainsFunc(sk.Files, func(f *catalog.File) bool { g := s.fileBy[f.URI]; return g != nil && g != f }) {
			c := *sk
			c.Files = slices.Clone(sk.Files)
			sk = &c
			s.skills[j], byPath[sk.Path] = sk, sk
		}
		s.byURI[sk.URI] = sk
		for i, f := range sk.Files {
			if g := s.fileBy[f.URI]; g != nil {
				sk.Files[i] = g
				continue
			}
			s.fileBy[f.URI] = f
			s.files = append(s.files, f)
			s.bytes += f.Size
		}
	}
	slices.SortFunc(s.files, func(a, b *catalog.File) int { return cmp.Compare(a.URI, b.URI) })
	s.buildDirs(base)
	s.id = s.digest()
	return s, nil
}

// buildDirs creates the directories of every skill and the prefix levels
// above them. A skill's own directories depend on the skill alone, so
// those of a skill unchanged since base are reused; deeper skills come
// later and own the directories they share with the skill around them.
func (s *snapshot) buildDirs(base *snapshot) {
	const scheme = catalog.DefaultScheme + "://"
	bySeg := slices.Clone(s.skills)
	slices.SortStableFunc(bySeg, func(a, b *catalog.Skill) int {
		return cmp.Compare(strings.Count(a.Path, "/"), strings.Count(b.Path, "/"))
	})
	s.own = make(map[string][]*catalog.Dir, len(s.skills))
	for _, sk := range bySeg {
		var ds []*catalog.Dir
		if base != nil && base.byPath[sk.Path] == sk {
			ds = base.own[sk.Path]
		} else {
			ds = skillDirs(sk)
		}
		s.own[sk.Path] = ds
		for _, d := range ds {
			s.dirs[d.URI] = d
		}
	}
	children := map[string]map[string]catalog.Child{}
	for _, sk := range s.skills {
		segs := strings.Split(sk.Path, "/")
		for i := len(segs) - 1; i >= 1; i-- {
			parentURI := scheme + strings.Join(segs[:i], "/")
			if d := s.dirs[parentURI]; d != nil && d.Skill != nil {
				break // inside a skill: its files list the children
			}
			cs := children[parentURI]
			if cs == nil {
				cs = map[string]catalog.Child{}
				children[parentURI] = cs
			}
			cs[segs[i]] = catalog.Child{URI: scheme + strings.Join(segs[:i+1], "/"), Name: segs[i]}
		}
	}
	for uri, cs := range children {
		d := &catalog.Dir{URI: uri, Path: strings.TrimPrefix(uri, scheme), Children: make([]catalog.Child, 0, len(cs))}
		for _, c := range cs {
			d.Children = append(d.Children, c)
		}
		slices.SortFunc(d.Children, func(a, b catalog.Child) int { return cmp.Compare(a.Name, b.Name) })
		s.dirs[uri] = d
	}
}

// skillDirs returns the directories of one skill: its root and every
// directory its files are in, each owned by the skill.
func skillDirs(sk *catalog.Skill) []*catalog.Dir {
	const scheme = catalog.DefaultScheme + "://"
	dirs := map[string]*catalog.Dir{}
	seen := map[string]bool{}
	dir := func(uri string) *catalog.Dir {
		d := dirs[uri]
		if d == nil {
			d = &catalog.Dir{URI: uri, Path: strings.TrimPrefix(uri, scheme), Skill: sk}
			dirs[uri] = d
		}
		return d
	}
	dir(sk.Root)
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
	out := make([]*catalog.Dir, 0, len(dirs))
	for _, d := range dirs {
		slices.SortFunc(d.Children, func(a, b catalog.Child) int { return cmp.Compare(a.Name, b.Name) })
		out = append(out, d)
	}
	return out
}

// digest identifies everything a client can observe of the snapshot, so
// that replicas at the same content hand out the same cursors.
func (s *snapshot) digest() string {
	h := sha256.New()
	var buf []byte
	for _, sk := range s.skills {
		buf = append(buf[:0], sk.URI...)
		buf = append(buf, 0)
		buf = append(buf, sk.Frontmatter.JSON()...)
		for _, f := range sk.Files {
			buf = append(buf, '\t')
			buf = append(buf, f.URI...)
			buf = append(buf, 0)
			buf = append(buf, f.Digest...)
			buf = strconv.AppendInt(buf, f.Size, 10)
		}
		h.Write(buf)
	}
	return "registry-" + hex.EncodeToString(h.Sum(nil))[:32]
}
