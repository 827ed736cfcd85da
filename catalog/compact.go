package catalog

import (
	"strings"

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
func (c *Catalog) compact(prev *Catalog) {
	moved := c.compactFiles(prev)
	skills := c.compactSkills(moved)
	c.compactDirs(moved, skills)
	c.compactDiags()
}

// compactDiags packs the strings of the diagnostics, and the skills'
// findings (whose messages are those of their diagnostics) into one slice.
func (c *Catalog) compactDiags() {
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
	n := 0
	for _, s := range c.skills {
		n += len(s.Findings)
	}
	slab := make([]skill.Finding, n)
	for _, s := range c.skills {
		if len(s.Findings) == 0 {
			continue
		}
		k := len(s.Findings)
		fs := slab[:k:k]
		slab = slab[k:]
		for i, f := range s.Findings {
			if m, ok := msgs[f.Message]; ok {
				f.Message = m
			}
			fs[i] = f
		}
		s.Findings = fs
	}
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
	if !strings.Contains(in, s) {
		p.add(s)
	}
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
	if i := strings.Index(in, s); i >= 0 {
		return in[i : i+len(s)]
	}
	return p.next()
}

func (p *stringPack) reset() { p.ends = p.ends[:0] }

// compactFiles moves the files prev did not publish, and returns where
// each went.
func (c *Catalog) compactFiles(prev *Catalog) map[*File]*File {
	var fresh []*File
	seen := make(map[*File]bool, len(c.files))
	for _, s := range c.skills { // in URI order, for locality
		for _, f := range s.Files {
			if seen[f] || prev != nil && prev.files[f.URI] == f {
				continue
			}
			seen[f] = true
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
	// A new map: the old one's keys are the strings the build made.
	files := make(map[string]*File, len(c.files))
	for _, f := range c.files {
		if nf := moved[f]; nf != nil {
			f = nf
		}
		files[f.URI] = f
	}
	c.files = files
	return moved
}

// compactSkills moves the skills, pointing them at the moved files, and
// returns where each went.
func (c *Catalog) compactSkills(moved map[*File]*File) map[*Skill]*Skill {
	slab := make([]Skill, len(c.skills))
	nfiles := 0
	for _, s := range c.skills {
		nfiles += len(s.Files)
	}
	files := make([]*File, nfiles)
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

// compactDirs moves the directories and their children, pointing them at
// the moved files and skills.
func (c *Catalog) compactDirs(moved map[*File]*File, skills map[*Skill]*Skill) {
	old := make([]*Dir, 0, len(c.dirs))
	nchildren := 0
	for _, d := range c.dirs {
		old = append(old, d)
		nchildren += len(d.Children)
	}
	slab := make([]Dir, len(old))
	children := make([]Child, nchildren)
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
			if s := skills[d.Skill]; s != nil {
				nd.Skill = s
			}
		}
	}
	dirs := make(map[string]*Dir, len(slab))
	for i := range slab {
		dirs[slab[i].URI] = &slab[i]
	}
	c.dirs = dirs
	// Children, once every directory has its packed URI: a child directory
	// shares its URI with the directory itself, a file with the file.
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
					if nf := moved[ch.File]; nf != nil {
						ch.File = nf
					}
					if ch.URI == ch.File.URI {
						ch.URI = ch.File.URI
					}
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
