package published

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/skillport/skillport/catalog"
)

// NewSnapshot builds the [Snapshot] of a list of skills: the maps by skill
// URI, file URI and directory URI that every request is answered from,
// built once. It is the one builder of snapshots: skillserver's adapter of
// a SkillSource, [CatalogSource], [Merge] and the sources that re-publish
// or filter skills (access rules, the gateway, the registry) all call it
// rather than implementing Snapshot.
//
// The skills need not be sorted; a nil skill, and a skill whose URI an
// earlier one has, are left out. A file listed by several skills (a nested
// skill's, inside its parent's) is published once, as the first skill
// lists it. Files need no content: their Size and Digest are what is
// listed, and read is called only when a client reads one, with a file of
// this snapshot (ReadFile of any other file is [catalog.ErrNotFound]).
// Directory resources are derived with [catalog.DirsOf], and the ID with
// [catalog.ContentID], on first use. What known (which may be nil) holds
// is used instead of being derived.
func NewSnapshot(skills []*catalog.Skill, read func(ctx context.Context, f *catalog.File) ([]byte, error), known *Known) Snapshot {
	return newSnapshot(skills, read, known)
}

// Known is what a publisher has already computed about its skills, handed
// to [NewSnapshot] so that it is not computed again: a catalog has its maps
// and content ID, a merge the IDs of its parts. A field left zero is
// derived from the skills.
type Known struct {
	// ID is the snapshot's content ID.
	ID string
	// Skill, File and Dir look a URI up; when Skill is set the skills are
	// taken as they are: sorted by URI, without nil or repeated ones.
	Skill func(uri string) *catalog.Skill
	File  func(uri string) *catalog.File
	Dir   func(uri string) *catalog.Dir
	// Dynamic returns a directory the skills do not derive (that of a
	// skill without Files), or nil; it is asked only after Dir.
	Dynamic func(uri string) *catalog.Dir
}

// snapshot is what [NewSnapshot] builds.
type snapshot struct {
	read   func(ctx context.Context, f *catalog.File) ([]byte, error)
	id     func() string // only cursors and change detection need it
	skills []*catalog.Skill
	skill  func(uri string) *catalog.Skill
	file   func(uri string) *catalog.File
	dir    func(uri string) *catalog.Dir
	more   func(uri string) *catalog.Dir
	// The files are indexed on first use: a source that replaces its
	// snapshot on every change (a registry) pays for the skills alone
	// until a file is looked up.
	files func() fileIndex
}

type fileIndex struct {
	sorted []*catalog.File
	byURI  map[string]*catalog.File // nil when Known.File looks them up
}

func newSnapshot(skills []*catalog.Skill, read func(ctx context.Context, f *catalog.File) ([]byte, error), known *Known) *snapshot {
	if known == nil {
		known = &Known{}
	}
	s := &snapshot{read: read, skill: known.Skill, file: known.File, dir: known.Dir, more: known.Dynamic}
	listed := skills // the order that decides which copy of a file is published
	if s.skill != nil {
		s.skills = skills
	} else {
		s.skills = make([]*catalog.Skill, 0, len(skills))
		byURI := make(map[string]*catalog.Skill, len(skills))
		for _, sk := range skills {
			if sk == nil || byURI[sk.URI] != nil {
				continue
			}
			s.skills = append(s.skills, sk)
			byURI[sk.URI] = sk
		}
		s.skill = func(uri string) *catalog.Skill { return byURI[uri] }
		listed = s.skills
		bySkillURI := func(a, b *catalog.Skill) int { return cmp.Compare(a.URI, b.URI) }
		if !slices.IsSortedFunc(s.skills, bySkillURI) {
			s.skills = slices.Clone(s.skills)
			slices.SortFunc(s.skills, bySkillURI)
		}
	}
	s.files = sync.OnceValue(func() fileIndex {
		var ix fileIndex
		nfiles := 0
		for _, sk := range listed {
			nfiles += len(sk.Files)
		}
		if known.File == nil {
			ix.byURI = make(map[string]*catalog.File, nfiles)
		}
		seen := func(f *catalog.File) bool {
			if ix.byURI == nil {
				return known.File(f.URI) != f // the one the lookup knows, listed once
			}
			if ix.byURI[f.URI] != nil {
				return true
			}
			ix.byURI[f.URI] = f
			return false
		}
		ix.sorted = make([]*catalog.File, 0, nfiles)
		for _, sk := range listed {
			for _, f := range sk.Files {
				if f != nil && !seen(f) {
					ix.sorted = append(ix.sorted, f)
				}
			}
		}
		byURI := func(a, b *catalog.File) int { return cmp.Compare(a.URI, b.URI) }
		if !slices.IsSortedFunc(ix.sorted, byURI) {
			slices.SortFunc(ix.sorted, byURI)
		}
		if ix.byURI == nil {
			// Nested skills list their parent's files again: keep one.
			ix.sorted = slices.CompactFunc(ix.sorted, func(a, b *catalog.File) bool { return a == b })
		}
		return ix
	})
	if s.file == nil {
		s.file = func(uri string) *catalog.File { return s.files().byURI[uri] }
	}
	if s.dir == nil {
		s.dir = lookup(sync.OnceValue(func() map[string]*catalog.Dir { return catalog.DirsOf(s.skills) }))
	}
	if known.ID != "" {
		s.id = func() string { return known.ID }
	} else {
		s.id = sync.OnceValue(func() string { return catalog.ContentID(s.skills, s.files().sorted) })
	}
	return s
}

// lookup looks a URI up in a map built on first use.
func lookup[T any](m func() map[string]*T) func(string) *T {
	return func(uri string) *T { return m()[uri] }
}

func (s *snapshot) ID() string                      { return s.id() }
func (s *snapshot) Skills() []*catalog.Skill        { return s.skills }
func (s *snapshot) Skill(uri string) *catalog.Skill { return s.skill(uri) }
func (s *snapshot) Files() []*catalog.File          { return s.files().sorted }
func (s *snapshot) File(uri string) *catalog.File   { return s.file(uri) }

func (s *snapshot) Dir(uri string) *catalog.Dir {
	if d := s.dir(uri); d != nil || s.more == nil {
		return d
	}
	if d := s.more(uri); d != nil && d.URI == uri {
		return d
	}
	return nil
}

func (s *snapshot) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	if f == nil || s.File(f.URI) != f {
		return nil, fmt.Errorf("server: %w", catalog.ErrNotFound)
	}
	if s.read == nil {
		return nil, fmt.Errorf("server: %s: %w", f.URI, catalog.ErrNotFound)
	}
	return s.read(ctx, f)
}
