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

// row is one current version as loaded from the database.
type row struct {
	path     string
	manifest []byte
}

// buildSnapshot turns the current versions into a snapshot. Files with the
// same URI (a nested skill's, listed by its parent too) are one *File.
func buildSnapshot(src *Source, gen int64, at time.Time, rows []row) (*snapshot, error) {
	const scheme = catalog.DefaultScheme + "://"
	s := &snapshot{src: src, gen: gen, at: at, byURI: make(map[string]*catalog.Skill, len(rows)),
		fileBy: make(map[string]*catalog.File, len(rows)*5), dirs: make(map[string]*catalog.Dir, len(rows)*3)}
	for _, r := range rows {
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
			uri := sk.Root + "/" + mf.Rel
			f := s.fileBy[uri]
			if f == nil {
				f = &catalog.File{URI: uri, Path: r.path + "/" + mf.Rel, Name: mf.Name, Size: mf.Size, Digest: mf.Digest, MIMEType: mf.MIME, Text: mf.Text}
				s.fileBy[uri] = f
				s.files = append(s.files, f)
				s.bytes += f.Size
			}
			sk.Files = append(sk.Files, f)
			sk.Size += f.Size
		}
		s.byURI[sk.URI] = sk
		s.skills = append(s.skills, sk)
	}
	slices.SortFunc(s.skills, func(a, b *catalog.Skill) int { return cmp.Compare(a.URI, b.URI) })
	slices.SortFunc(s.files, func(a, b *catalog.File) int { return cmp.Compare(a.URI, b.URI) })
	s.buildDirs()
	s.id = s.digest()
	return s, nil
}

// buildDirs creates the directories of every skill (outer skills first, so
// that the innermost skill owns a directory) and the prefix levels above.
func (s *snapshot) buildDirs() {
	const scheme = catalog.DefaultScheme + "://"
	bySeg := slices.Clone(s.skills)
	slices.SortStableFunc(bySeg, func(a, b *catalog.Skill) int {
		return cmp.Compare(strings.Count(a.Path, "/"), strings.Count(b.Path, "/"))
	})
	child := map[string]map[string]catalog.Child{}
	dir := func(uri string, sk *catalog.Skill) *catalog.Dir {
		d := s.dirs[uri]
		if d == nil {
			d = &catalog.Dir{URI: uri, Path: strings.TrimPrefix(uri, scheme)}
			s.dirs[uri] = d
			child[uri] = map[string]catalog.Child{}
		}
		if sk != nil {
			d.Skill = sk
		}
		return d
	}
	for _, sk := range bySeg {
		dir(sk.Root, sk)
		for _, f := range sk.Files {
			rel := strings.TrimPrefix(f.URI, sk.Root+"/")
			parent := sk.Root
			segs := strings.Split(rel, "/")
			for i, seg := range segs {
				uri := parent + "/" + seg
				if i == len(segs)-1 {
					child[parent][seg] = catalog.Child{URI: uri, Name: f.Name, File: f}
					break
				}
				child[parent][seg] = catalog.Child{URI: uri, Name: seg}
				dir(uri, nil)
				if d := s.dirs[uri]; d.Skill == nil || strings.Count(d.Skill.Path, "/") <= strings.Count(sk.Path, "/") {
					d.Skill = sk
				}
				parent = uri
			}
		}
	}
	for _, sk := range s.skills {
		segs := strings.Split(sk.Path, "/")
		for i := len(segs) - 1; i >= 1; i-- {
			parentURI := scheme + strings.Join(segs[:i], "/")
			if d := s.dirs[parentURI]; d != nil && d.Skill != nil {
				break // inside a skill: its files list the children
			}
			dir(parentURI, nil)
			child[parentURI][segs[i]] = catalog.Child{URI: scheme + strings.Join(segs[:i+1], "/"), Name: segs[i]}
		}
	}
	for uri, d := range s.dirs {
		cs := child[uri]
		d.Children = make([]catalog.Child, 0, len(cs))
		for _, c := range cs {
			d.Children = append(d.Children, c)
		}
		slices.SortFunc(d.Children, func(a, b catalog.Child) int { return cmp.Compare(a.Name, b.Name) })
	}
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
