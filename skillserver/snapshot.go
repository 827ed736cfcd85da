package skillserver

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
// built once. It is the one builder behind [FromSkills] and the sources
// that re-publish or filter skills; a source that keeps its own skills
// calls it rather than implementing Snapshot.
//
// The skills need not be sorted; a nil skill, and a skill whose URI an
// earlier one has, are left out. A file listed by several skills (a nested
// skill's, inside its parent's) is published once, as the first skill
// lists it. Files need no content: their Size and Digest are what is
// listed, and read is called only when a client reads one, with a file of
// this snapshot (ReadFile of any other file is [catalog.ErrNotFound]).
// Directory resources are derived with [catalog.DirsOf], and the ID with
// [catalog.ContentID], on first use.
func NewSnapshot(skills []*catalog.Skill, read func(ctx context.Context, f *catalog.File) ([]byte, error)) Snapshot {
	return newSkillSnapshot(skills, read)
}

// skillSnapshot is what [NewSnapshot] builds.
type skillSnapshot struct {
	read   func(ctx context.Context, f *catalog.File) ([]byte, error)
	id     func() string // only cursors and change detection need it
	skills []*catalog.Skill
	byURI  map[string]*catalog.Skill
	// The files are indexed on first use: a source that replaces its
	// snapshot on every change (a registry) pays for the skills alone
	// until a file is looked up.
	files func() fileIndex
	dirs  func() map[string]*catalog.Dir // only directory reads need it
}

type fileIndex struct {
	sorted []*catalog.File
	byURI  map[string]*catalog.File
}

func newSkillSnapshot(skills []*catalog.Skill, read func(ctx context.Context, f *catalog.File) ([]byte, error)) *skillSnapshot {
	s := &skillSnapshot{read: read, skills: make([]*catalog.Skill, 0, len(skills)),
		byURI: make(map[string]*catalog.Skill, len(skills))}
	nfiles := 0
	for _, sk := range skills {
		if sk == nil || s.byURI[sk.URI] != nil {
			continue
		}
		s.skills = append(s.skills, sk)
		s.byURI[sk.URI] = sk
		nfiles += len(sk.Files)
	}
	listed := s.skills // the order that decides which copy of a file is published
	byURI := func(a, b *catalog.Skill) int { return cmp.Compare(a.URI, b.URI) }
	if !slices.IsSortedFunc(s.skills, byURI) {
		s.skills = slices.Clone(s.skills)
		slices.SortFunc(s.skills, byURI)
	}
	s.files = sync.OnceValue(func() fileIndex {
		ix := fileIndex{sorted: make([]*catalog.File, 0, nfiles), byURI: make(map[string]*catalog.File, nfiles)}
		for _, sk := range listed {
			for _, f := range sk.Files {
				if f != nil && ix.byURI[f.URI] == nil {
					ix.byURI[f.URI] = f
					ix.sorted = append(ix.sorted, f)
				}
			}
		}
		byURI := func(a, b *catalog.File) int { return cmp.Compare(a.URI, b.URI) }
		if !slices.IsSortedFunc(ix.sorted, byURI) {
			slices.SortFunc(ix.sorted, byURI)
		}
		return ix
	})
	s.dirs = sync.OnceValue(func() map[string]*catalog.Dir { return catalog.DirsOf(s.skills) })
	s.id = sync.OnceValue(func() string { return catalog.ContentID(s.skills, s.files().sorted) })
	return s
}

func (s *skillSnapshot) ID() string                      { return s.id() }
func (s *skillSnapshot) Skills() []*catalog.Skill        { return s.skills }
func (s *skillSnapshot) Skill(uri string) *catalog.Skill { return s.byURI[uri] }
func (s *skillSnapshot) Files() []*catalog.File          { return s.files().sorted }
func (s *skillSnapshot) File(uri string) *catalog.File   { return s.files().byURI[uri] }
func (s *skillSnapshot) Dir(uri string) *catalog.Dir     { return s.dirs()[uri] }

func (s *skillSnapshot) ReadFile(ctx context.Context, f *catalog.File) ([]byte, error) {
	if f == nil || s.File(f.URI) != f {
		return nil, fmt.Errorf("server: %w", catalog.ErrNotFound)
	}
	if s.read == nil {
		return nil, fmt.Errorf("server: %s: %w", f.URI, catalog.ErrNotFound)
	}
	return s.read(ctx, f)
}
