package catalog

import (
	"slices"
	"strings"
	"sync"

	"github.com/skillport/skillport/skill"
)

// packChunk is how many objects share one packed string: large enough that
// a chunk is an allocation of its own (tens of KiB, never mixed with the
// build's garbage), small enough that a file or directory kept alive by a
// later snapshot keeps little else with it.
const packChunk = 512

// compact moves what a newly built catalog publishes (its skills,
// directories and the files prev did not already publish) into a few large
// allocations: each kind of object in one slice, and the strings of
// packChunk objects in one string. The build allocates these objects one by
// one among hundreds of thousands of short-lived ones (walk records,
// listings, parsed YAML), so once the garbage is collected they are spread
// thinly over pages the runtime cannot give back: on the 21,066-skill
// real-world tree the heap kept 50 MB more than was live. Packed, they sit
// in pages of their own and the garbage's pages are freed whole.
//
// Files prev published stay the objects they are, so that an unchanged
// reload can still share prev's (see shareUnchanged). Frontmatter is kept
// lean (skill.Frontmatter.Lean): its JSON, name and description.
//
// Compaction only writes to what it allocates (and to c's own fields and
// diagnostics), never to the objects it moves, so that [Catalog.Pack] can
// pack a copy of a catalog that is being read. Its steps run as soon as
// what they read is ready, on as many cores as there are: files,
// diagnostics and directory paths first, then skills beside directory
// children, then directories' skills.
func (c *Catalog) compact(prev *Catalog) {
	var (
		wg    sync.WaitGroup
		moved map[*File]*File
		msgs  map[string]string
		dirs  []Dir
	)
	wg.Go(func() { msgs = c.compactDiags() })
	wg.Go(func() { dirs = c.compactDirPaths() })
	moved = c.compactFiles(prev)
	wg.Wait()
	var skills map[*Skill]*Skill
	wg.Go(func() { skills = c.compactSkills(moved, msgs) })
	c.compactChildren(dirs, moved)
	wg.Wait()
	for i := range dirs {
		if s := skills[dirs[i].Skill]; s != nil {
			dirs[i].Skill = s
		}
	}
}

// Pack returns c packed: its skills, files and directories moved into a
// few large allocations that free the pages of the build's garbage (see
// [Options.PackLater]). It returns c itself when c is packed already;
// otherwise a copy with the same [Catalog.ID], answering every call as c
// does, and c is not modified, so that readers may keep using it while
// Pack runs. The copy takes over what lets a reload of an unchanged tree
// skip the walk: reload the copy, not c.
func (c *Catalog) Pack() *Catalog {
	if c.packed || c.src.check {
		return c
	}
	p := *c
	p.skills = slices.Clone(c.skills)
	p.diags = slices.Clone(c.diags)
	p.compact(nil)
	p.packed = true
	c.src.mu.Lock()
	if c.src.listingsOf == c {
		c.src.listingsOf = &p
	}
	c.src.mu.Unlock()
	return &p
}

// compactDiags packs the strings of the diagnostics, in place, and
// returns their messages by value, for the skills' findings (whose
// messages are those of their diagnostics).
func (c *Catalog) compactDiags() map[string]string {
	msgs := make(map[string]string)
	var pack stringPack
	for lo := 0; lo < len(c.diags); lo += packChunk {
		chunk := c.diags[lo:min(lo+packChunk, len(c.diags))]
		pack.reset()
		for _, d := range chunk {
			pack.add(d.Path)
			pack.want(d.Skill, d.Path)
			pack.add(d.Message)
		}
		pack.done()
		for i := range chunk {
			d := &chunk[i]
			d.Path = pack.next()
			d.Skill = pack.take(d.Skill, d.Path)
			d.Message = pack.next()
			msgs[d.Message] = d.Message
		}
	}
	return msgs
}

// stringPack concatenates strings and hands back each one as a part of
// the whole, so that many short strings take one allocation.
type stringPack struct {
	b    strings.Builder
	ends []int
	all  string
	k    int
}

// add queues s and returns its index for get.
func (p *stringPack) add(s string) int {
	p.b.WriteString(s)
	p.ends = append(p.ends, p.b.Len())
	return len(p.ends) - 1
}

// want queues s unless it is a part of in, which is packed too.
func (p *stringPack) want(s, in string) {
	if partOf(s, in) < 0 {
		p.add(s)
	}
}

// partOf is the index of s in in, or -1. The strings packed beside a URI
// are most often its end (a path, a name), which is tried first.
func partOf(s, in string) int {
	if strings.HasSuffix(in, s) {
		return len(in) - len(s)
	}
	return strings.Index(in, s)
}

// done returns the packed string; get cuts parts of it.
func (p *stringPack) done() string {
	p.all = strings.Clone(p.b.String()) // exactly sized
	p.k = 0
	p.b.Reset()
	return p.all
}

func (p *stringPack) get(all string, i int) string {
	start := 0
	if i > 0 {
		start = p.ends[i-1]
	}
	return all[start:p.ends[i]]
}

// next returns the next string queued, in the order of add and want
// calls since reset; take, in the place of a want, returns s as the part
// of in (now packed) that it is, or the next string queued.
func (p *stringPack) next() string {
	p.k++
	return p.get(p.all, p.k-1)
}

func (p *stringPack) take(s, in string) string {
	if i := partOf(s, in); i >= 0 {
		return in[i : i+len(s)]
	}
	return p.next()
}

func (p *stringPack) reset() { p.ends = p.ends[:0] }

// compactFiles moves the files prev did not publish, and returns where
// each went.
func (c *Catalog) compactFiles(prev *Catalog) map[*File]*File {
	var fresh, kept []*File
	seen := make(map[*File]bool, len(c.files))
	for _, s := range c.skills { // in URI order, for locality
		for _, f := range s.Files {
			if seen[f] {
				continue
			}
			seen[f] = true
			if prev != nil && prev.files[f.URI] == f {
				kept = append(kept, f)
				continue
			}
			fresh = append(fresh, f)
		}
	}
	moved := make(map[*File]*File, len(fresh))
	slab := make([]File, len(fresh))
	var pack stringPack
	for lo := 0; lo < len(fresh); lo += packChunk {
		chunk := fresh[lo:min(lo+packChunk, len(fresh))]
		pack.reset()
		for _, f := range chunk {
			pack.add(f.URI)
			pack.want(f.Path, f.URI) // the URI is the scheme and the path, unless folders were renamed
			pack.add(f.Digest)
			pack.add(f.content)
		}
		pack.done()
		for i, f := range chunk {
			nf := &slab[lo+i]
			*nf = *f
			nf.URI = pack.next()
			nf.Path = pack.take(f.Path, nf.URI)
			nf.Digest = pack.next()
			nf.content = pack.next()
			nf.Name = nf.Path[strings.LastIndexByte(nf.Path, '/')+1:]
			if nf.Name != f.Name { // a name is its path's last segment; keep any other as it is
				nf.Name = f.Name
			}
			moved[f] = nf
		}
	}
	// A new map: the old one's keys are the strings the build made. Every
	// file a skill lists is a file of the catalog, and the other way round.
	files := make(map[string]*File, len(c.files))
	for i := range slab {
		files[slab[i].URI] = &slab[i]
	}
	for _, f := range kept {
		files[f.URI] = f
	}
	c.files = files
	return moved
}

// compactSkills moves the skills, pointing them at the moved files and
// their findings (into one slice) at the packed messages msgs, and returns
// where each went.
func (c *Catalog) compactSkills(moved map[*File]*File, msgs map[string]string) map[*Skill]*Skill {
	slab := make([]Skill, len(c.skills))
	nfiles, nfindings := 0, 0
	for _, s := range c.skills {
		nfiles += len(s.Files)
		nfindings += len(s.Findings)
	}
	files := make([]*File, nfiles)
	findings := make([]skill.Finding, nfindings)
	skills := make(map[*Skill]*Skill, len(c.skills))
	var pack stringPack
	for lo := 0; lo < len(c.skills); lo += packChunk {
		chunk := c.skills[lo:min(lo+packChunk, len(c.skills))]
		pack.reset()
		for _, s := range chunk {
			pack.add(s.URI)
			pack.want(s.Dir, s.URI)
			pack.want(s.Path, s.URI)
			pack.want(s.Name, s.URI)
		}
		pack.done()
		fms := make([]skill.Frontmatter, len(chunk))
		for i, s := range chunk {
			fms[i] = s.Frontmatter
		}
		fms = skill.LeanPack(fms)
		for i, s := range chunk {
			ns := &slab[lo+i]
			*ns = *s
			ns.Frontmatter = fms[i]
			ns.URI = pack.next()
			ns.Dir = pack.take(s.Dir, ns.URI)
			ns.Path = pack.take(s.Path, ns.URI)
			ns.Name = pack.take(s.Name, ns.URI)
			if strings.HasPrefix(ns.URI, s.Root) {
				ns.Root = ns.URI[:len(s.Root)]
			}
			n := len(s.Files)
			ns.Files = files[:n:n]
			files = files[n:]
			for j, f := range s.Files {
				if nf := moved[f]; nf != nil {
					f = nf
				}
				ns.Files[j] = f
			}
			if k := len(s.Findings); k > 0 {
				ns.Findings = findings[:k:k]
				findings = findings[k:]
				for j, f := range s.Findings {
					if m, ok := msgs[f.Message]; ok {
						f.Message = m
					}
					ns.Findings[j] = f
				}
			}
			skills[s] = ns
			c.skills[lo+i] = ns
		}
	}
	c.byURI = make(map[string]*Skill, len(c.skills))
	for _, s := range c.skills {
		c.byURI[s.URI] = s
	}
	return skills
}

// compactDirPaths moves the directories into one slice with packed URIs
// and paths, makes c.dirs index them and returns them; their children and
// skills are still the old ones (see compactChildren).
func (c *Catalog) compactDirPaths() []Dir {
	old := make([]*Dir, 0, len(c.dirs))
	for _, d := range c.dirs {
		old = append(old, d)
	}
	slab := make([]Dir, len(old))
	var pack stringPack
	for lo := 0; lo < len(old); lo += packChunk {
		chunk := old[lo:min(lo+packChunk, len(old))]
		pack.reset()
		for _, d := range chunk {
			pack.add(d.URI)
			pack.want(d.Path, d.URI)
		}
		pack.done()
		for i, d := range chunk {
			nd := &slab[lo+i]
			*nd = *d
			nd.URI = pack.next()
			nd.Path = pack.take(d.Path, nd.URI)
		}
	}
	dirs := make(map[string]*Dir, len(slab))
	for i := range slab {
		dirs[slab[i].URI] = &slab[i]
	}
	c.dirs = dirs
	return slab
}

// compactChildren moves the children of the directories compactDirPaths
// returned into one slice, pointing them at the moved files: a child
// directory shares its URI with the directory itself, a file with the file.
func (c *Catalog) compactChildren(slab []Dir, moved map[*File]*File) {
	nchildren := 0
	for i := range slab {
		nchildren += len(slab[i].Children)
	}
	children := make([]Child, nchildren)
	var pack stringPack
	for lo := 0; lo < len(slab); lo += packChunk {
		chunk := slab[lo:min(lo+packChunk, len(slab))]
		pack.reset()
		for _, d := range chunk {
			for _, ch := range d.Children {
				pack.want(ch.Name, ch.URI)
			}
		}
		pack.done()
		for i := range chunk {
			d := &chunk[i]
			if d.Children == nil {
				continue
			}
			n := len(d.Children)
			kids := children[:n:n]
			children = children[n:]
			for j, ch := range d.Children {
				name := ch.Name
				switch {
				case ch.File != nil:
					f := ch.File
					if nf := moved[f]; nf != nil {
						f = nf
					}
					if ch.URI == ch.File.URI { // most often the same string: no bytes compared
						ch.URI = f.URI
					}
					ch.File = f
				default:
					if sub := c.dirs[ch.URI]; sub != nil {
						ch.URI = sub.URI
					}
				}
				ch.Name = pack.take(name, ch.URI)
				kids[j] = ch
			}
			d.Children = kids
		}
	}
}
