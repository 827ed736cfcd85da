package catalog

import (
	"cmp"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/skillport/skillport/skill"
)

// ContentID returns the id the tree gave the file's content (see
// [ContentIdentifier]), "" if it gave none: a git source keeps digests by
// blob id from it without looking the file up again.
func (f *File) ContentID() string { return f.content }

// ReloadChanged builds the snapshot of fsys, a tree equal to this
// snapshot's except at the paths in changed, reading only those: every
// skill outside them is taken from this snapshot as it is (files, digests,
// frontmatter, findings), so a commit that touches one skill of thousands
// costs that skill and the listings above it, not a walk of the whole tree.
//
// changed lists slash paths (files or directories, added, removed or
// modified) such that everything else in fsys is what this snapshot was
// built from: a content-addressed tree finds them by comparing subtree
// ids. A path inside a skill must be given as the skill's directory, and
// fsys must not follow symbolic links (see [ContentIdentifier]); a
// gitsource FS follows none. The result is what [Catalog.ReloadFS] would
// build; when a change could alter the URIs of skills outside changed (two
// folders mapping to one URI segment, a skill at the root), it falls back
// to that full build.
func (c *Catalog) ReloadChanged(fsys fs.FS, changed []string) (*Catalog, error) {
	if fsys == nil {
		return nil, errors.New("catalog: nil fs.FS")
	}
	sp, ok := newSplice(c, changed)
	if !ok {
		return c.ReloadFS(fsys)
	}
	if m := sp.merge(fsys); m != nil {
		attachSignatures(m, fsys) // the regions' build saw only its sparse view
		return m, nil
	}
	return c.ReloadFS(fsys)
}

// splice is the state of one ReloadChanged.
type splice struct {
	prev    *Catalog
	regions []string        // changed paths, rebuilt whole
	region  map[string]bool // the same, as a set
	above   map[string]bool // strict ancestors of regions: directories above skills
	// inSkill is set when a folder above the regions turns out to hold a
	// SKILL.md (in any case): a region inside a skill is the whole skill.
	inSkill atomic.Bool
	// inside is prev cut down to the skills in the regions: what the
	// builds of the regions may reuse, without indexing all of prev.
	inside *Catalog
}

func newSplice(prev *Catalog, changed []string) (*splice, bool) {
	sp := &splice{prev: prev, region: map[string]bool{}, above: map[string]bool{}}
	for _, p := range changed {
		p = strings.Trim(p, "/")
		if p == "" || p == "." || !fs.ValidPath(p) {
			return nil, false // the root itself: nothing to keep
		}
		if !sp.region[p] {
			sp.region[p] = true
			sp.regions = append(sp.regions, p)
		}
	}
	slices.Sort(sp.regions)
	// Drop regions inside others.
	kept := sp.regions[:0]
	for _, p := range sp.regions {
		if sp.inRegion(path.Dir(p)) {
			delete(sp.region, p)
			continue
		}
		kept = append(kept, p)
	}
	sp.regions = kept
	for _, p := range sp.regions {
		for d := path.Dir(p); ; d = path.Dir(d) {
			sp.above[d] = true
			if d == "." {
				break
			}
		}
	}
	// A collision refuses skills on both sides of it; whether it still
	// holds is for a full build to decide.
	for _, d := range prev.diags {
		if d.Rule == RuleDuplicate {
			return nil, false
		}
	}
	sp.inside = &Catalog{opts: prev.opts, files: map[string]*File{}}
	for _, s := range prev.skills {
		if s.Dir == "." || sp.above[s.Dir] {
			return nil, false // a skill above a change: not a region boundary
		}
		if sp.inRegion(s.Dir) {
			sp.inside.skills = append(sp.inside.skills, s)
			for _, f := range s.Files {
				sp.inside.files[f.URI] = f
			}
		}
	}
	return sp, true
}

// inRegion reports whether p is a region or lies inside one.
func (sp *splice) inRegion(p string) bool {
	for {
		if sp.region[p] {
			return true
		}
		if p == "." || p == "" {
			return false
		}
		p = path.Dir(p)
	}
}

// build makes the catalog of the regions of fsys alone, with prev's
// digests; log receives its diagnostics.
func (sp *splice) build(fsys fs.FS, log *slog.Logger) (*Catalog, error) {
	o := sp.prev.opts
	o.Logger = log
	return build(&source{fsys: &sparseFS{fsys: fsys, sp: sp}}, &o, sp.inside)
}

// merge returns the spliced catalog, or nil when a full build is needed.
func (sp *splice) merge(fsys fs.FS) *Catalog {
	start := time.Now()
	prev := sp.prev
	// What the regions held before, built from the old tree: all reused.
	old, err := sp.build(prev.src.fsys, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil
	}
	log := prev.opts.Logger
	if log == nil {
		log = slog.Default()
	}
	part, err := sp.build(fsys, log)
	if err != nil {
		return nil
	}
	if sp.inSkill.Load() {
		return nil
	}
	for _, p := range [...]*Catalog{old, part} {
		for _, d := range p.diags {
			if d.Rule == RuleDuplicate {
				return nil
			}
		}
	}
	if !sp.segmentsFree(fsys, part) {
		return nil
	}

	c := &Catalog{src: &source{fsys: fsys}, opts: prev.opts, byURI: make(map[string]*Skill, len(prev.skills)+len(part.skills)),
		files: make(map[string]*File, len(prev.files)+len(part.files)), dirs: make(map[string]*Dir, len(prev.dirs)+len(part.dirs))}
	c.skills = make([]*Skill, 0, len(prev.skills)-len(old.skills)+len(part.skills))
	for _, s := range prev.skills {
		if !sp.inRegion(s.Dir) {
			c.skills = append(c.skills, s)
		}
	}
	c.skills = append(c.skills, part.skills...)
	slices.SortFunc(c.skills, func(a, x *Skill) int { return cmp.Compare(a.URI, x.URI) })
	for i, s := range c.skills {
		if i > 0 && c.skills[i-1].URI == s.URI {
			return nil
		}
		c.byURI[s.URI] = s
	}
	for uri, f := range prev.files {
		if old.files[uri] == nil {
			c.files[uri] = f
		}
	}
	for uri, f := range part.files {
		if c.files[uri] != nil {
			return nil
		}
		c.files[uri] = f
	}

	// Directories: those of kept skills as they were, those of the
	// regions' skills anew, and the prefix levels above the regions
	// listed again from the skills below them.
	levels := map[string]*Dir{}
	for uri, d := range prev.dirs {
		if d.Skill == nil && (old.dirs[uri] != nil || part.dirs[uri] != nil) {
			levels[uri] = d
			continue
		}
		if old.dirs[uri] == nil {
			c.dirs[uri] = d
		}
	}
	for uri, d := range part.dirs {
		if d.Skill == nil {
			if levels[uri] == nil {
				levels[uri] = d
			}
			continue
		}
		if c.dirs[uri] != nil {
			return nil
		}
		c.dirs[uri] = d
	}
	for uri := range old.dirs {
		if _, ok := levels[uri]; !ok && old.dirs[uri].Skill == nil {
			if d := prev.dirs[uri]; d != nil {
				levels[uri] = d
			}
		}
	}
	for uri, d := range levels {
		if nd := c.level(uri, d.Path); nd != nil {
			c.dirs[uri] = nd
		}
	}

	// Diagnostics: the regions' from the new build, the rest as they were;
	// a folder above the regions keeps its warning while it holds skills.
	for _, d := range prev.diags {
		if !sp.inRegion(d.Path) && !sp.above[d.Path] {
			c.diags = append(c.diags, d)
		}
	}
	for _, d := range part.diags {
		if sp.inRegion(d.Path) {
			c.diags = append(c.diags, d)
		}
	}
	warned := map[string]bool{}
	for _, list := range [...][]Diagnostic{prev.diags, part.diags} {
		for _, d := range list {
			if sp.above[d.Path] && !warned[d.Path] && c.holdsSkill(d.Path) {
				warned[d.Path] = true
				c.diags = append(c.diags, d)
			}
		}
	}
	slices.SortStableFunc(c.diags, func(a, x Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Path, x.Path), cmp.Compare(a.Line, x.Line), cmp.Compare(a.Column, x.Column))
	})

	st := &c.stats
	st.Skills = len(c.skills)
	st.Files = prev.stats.Files - old.stats.Files + part.stats.Files
	st.Bytes = prev.stats.Bytes - old.stats.Bytes + part.stats.Bytes
	st.Invalid = prev.stats.Invalid - old.stats.Invalid + part.stats.Invalid
	st.Skipped = prev.stats.Skipped - old.stats.Skipped + part.stats.Skipped
	st.Found = prev.stats.Found - old.stats.Found + part.stats.Found
	st.Hashed = part.stats.Hashed
	st.Reused = st.Files - part.stats.Files + part.stats.Reused
	c.id = catalogID(c)
	c.built = time.Now()
	st.Duration = c.built.Sub(start)
	return c
}

// level lists a prefix level again from the published skills below it, or
// returns nil when none is left.
func (c *Catalog) level(uri, treePath string) *Dir {
	below := uri + "/"
	i, _ := slices.BinarySearchFunc(c.skills, below, func(s *Skill, t string) int { return cmp.Compare(s.URI, t) })
	d := &Dir{URI: uri, Path: treePath}
	seen := map[string]bool{}
	for _, s := range c.skills[i:] {
		if !strings.HasPrefix(s.URI, below) {
			break
		}
		name, _, _ := strings.Cut(s.Root[len(below):], "/")
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		d.Children = append(d.Children, Child{URI: below + name, Name: name})
	}
	if len(d.Children) == 0 {
		return nil
	}
	// A level may itself be a skill's root only through a collision,
	// which sends the splice to a full build.
	slices.SortFunc(d.Children, func(a, x Child) int { return cmp.Compare(a.Name, x.Name) })
	return d
}

// holdsSkill reports whether a published skill lies below tree directory dir.
func (c *Catalog) holdsSkill(dir string) bool {
	for _, s := range c.skills {
		if isAncestor(dir, s.Dir) && s.Dir != dir {
			return true
		}
	}
	return false
}

// segmentsFree reports whether no region's folder can map to the URI
// segment of another folder beside it. A folder's segment is its name,
// mapped, or the name its SKILL.md gives; both are compared, so that any
// collision a full build would find (and some it would not) is caught.
// The folders beside a region are compared by name only; their skills'
// names come from this snapshot (published ones by URI, refused ones by
// their diagnostics), so that a change costs the regions, not a read of
// every skill beside them.
func (sp *splice) segmentsFree(fsys fs.FS, part *Catalog) bool {
	prev := sp.prev
	if prev.opts.Filter != nil {
		return false // a skill left out by Filter leaves no trace to compare
	}
	byParent := map[string][]string{}
	for _, r := range sp.regions {
		byParent[path.Dir(r)] = append(byParent[path.Dir(r)], r)
	}
	partAt := make(map[string]*Skill, len(part.skills))
	for _, s := range part.skills {
		partAt[s.Dir] = s
	}
	type key struct{ seg, dir string }
	for parent, regions := range byParent {
		first := parent == "." && prev.opts.Prefix == ""
		var keys []key
		for _, r := range regions {
			if fi, err := fs.Stat(fsys, r); err != nil || !fi.IsDir() {
				continue // removed, or a file
			}
			keys = append(keys, key{folderSegment(path.Base(r), first), r})
			if s := partAt[r]; s != nil {
				keys = append(keys, key{path.Base(s.Path), r})
			} else if name, ok := entryName(fsys, r); ok {
				keys = append(keys, key{name, r})
			}
		}
		if len(keys) == 0 {
			continue
		}
		for i, a := range keys {
			for _, b := range keys[i+1:] {
				if a.seg == b.seg && a.dir != b.dir {
					return false
				}
			}
		}
		// Folders beside the regions, by their names' segments.
		entries, err := fs.ReadDir(fsys, parent)
		if err != nil {
			return false
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || !prev.opts.IncludeDotFiles && strings.HasPrefix(name, ".") {
				continue
			}
			seg := folderSegment(name, first)
			for _, k := range keys {
				if seg == k.seg && path.Base(k.dir) != name {
					return false
				}
			}
		}
		// Skills published beside them, by name.
		at := sp.uriPath(parent)
		for _, k := range keys {
			if s := prev.byURI[prev.opts.Scheme+"://"+joinURIPath(at, k.seg)+"/"+FileNameSKILL]; s != nil && !sp.inRegion(s.Dir) {
				return false
			}
		}
		// Skills refused beside them, which still claim their names.
		refused := map[string]bool{}
		for _, d := range prev.diags {
			if d.Skill == "" || d.Skill == "." || refused[d.Skill] || path.Dir(d.Skill) != parent || sp.inRegion(d.Skill) {
				continue
			}
			refused[d.Skill] = true
			if name, ok := entryName(fsys, d.Skill); ok {
				for _, k := range keys {
					if name == k.seg {
						return false
					}
				}
			}
		}
	}
	return true
}

// folderSegment is the URI segment of a folder named name above skills,
// without allocating for a plain name.
func folderSegment(name string, first bool) string {
	if plainSegment(name) {
		return name
	}
	return prefixSegment(name, first)
}

// uriPath is the URI path of tree directory dir above the regions: the
// prefix, then each folder's segment (none of them is a skill).
func (sp *splice) uriPath(dir string) string {
	p := sp.prev.opts.Prefix
	if dir == "." {
		return p
	}
	for _, seg := range strings.Split(dir, "/") {
		p = joinURIPath(p, folderSegment(seg, p == ""))
	}
	return p
}

// plainSegment reports whether a folder name is its own URI segment at
// any level: lowercase letters, digits, "-", ".", "_", "~", with a letter
// or digit.
func plainSegment(name string) bool {
	alnum := false
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			alnum = true
		case c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return alnum
}

// entryName is the name the SKILL.md of dir gives, if it has one that parses.
func entryName(fsys fs.FS, dir string) (string, bool) {
	fi, err := fs.Stat(fsys, path.Join(dir, FileNameSKILL))
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > DefaultMaxBytes {
		return "", false
	}
	data, err := fs.ReadFile(fsys, path.Join(dir, FileNameSKILL))
	if err != nil {
		return "", false
	}
	doc, err := skill.Parse(data)
	if err != nil {
		return "", false
	}
	return doc.Frontmatter.Name(), true
}

// sparseFS shows of a tree only the regions of a splice and the folders
// leading to them, so that a build of it reads nothing else.
type sparseFS struct {
	fsys fs.FS
	sp   *splice
}

func (s *sparseFS) shown(name string) bool {
	return name == "." || s.sp.above[name] || s.sp.inRegion(name)
}

func (s *sparseFS) hidden(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

func (s *sparseFS) Open(name string) (fs.File, error) {
	if !s.shown(name) {
		return nil, s.hidden("open", name)
	}
	f, err := s.fsys.Open(name)
	if err != nil || !s.sp.above[name] {
		return f, err
	}
	return &sparseDir{File: f, fs: s, name: name}, nil
}

func (s *sparseFS) Stat(name string) (fs.FileInfo, error) {
	if !s.shown(name) {
		return nil, s.hidden("stat", name)
	}
	return fs.Stat(s.fsys, name)
}

func (s *sparseFS) Lstat(name string) (fs.FileInfo, error) {
	if !s.shown(name) {
		return nil, s.hidden("lstat", name)
	}
	return fs.Lstat(s.fsys, name)
}

func (s *sparseFS) ReadLink(name string) (string, error) {
	if !s.shown(name) {
		return "", s.hidden("readlink", name)
	}
	return fs.ReadLink(s.fsys, name)
}

func (s *sparseFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !s.shown(name) {
		return nil, s.hidden("readdir", name)
	}
	es, err := fs.ReadDir(s.fsys, name)
	if err != nil || !s.sp.above[name] {
		return es, err
	}
	return s.filter(name, es), nil
}

// filter keeps the entries of a folder above the regions that lead to them.
func (s *sparseFS) filter(dir string, es []fs.DirEntry) []fs.DirEntry {
	out := es[:0:0]
	for _, e := range es {
		if strings.EqualFold(e.Name(), FileNameSKILL) {
			s.sp.inSkill.Store(true)
		}
		p := e.Name()
		if dir != "." {
			p = dir + "/" + p
		}
		if s.sp.above[p] || s.sp.region[p] {
			out = append(out, e)
		}
	}
	return out
}

// sparseDir is a folder above the regions, opened.
type sparseDir struct {
	fs.File
	fs   *sparseFS
	name string
	ents []fs.DirEntry
	read bool
}

func (d *sparseDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		d.read = true
		es, err := d.fs.ReadDir(d.name)
		if err != nil {
			return nil, err
		}
		d.ents = es
	}
	if n <= 0 {
		rest := d.ents
		d.ents = nil
		return rest, nil
	}
	if len(d.ents) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.ents))
	out := d.ents[:n]
	d.ents = d.ents[n:]
	return out, nil
}

var _ fs.ReadLinkFS = (*sparseFS)(nil)
var _ fs.ReadDirFS = (*sparseFS)(nil)
var _ fs.StatFS = (*sparseFS)(nil)
