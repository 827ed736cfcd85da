package catalog

import "slices"

// shareUnchanged returns c, a catalog just rebuilt from prev, or, when c
// publishes exactly what prev publishes, a snapshot with c's diagnostics
// and counts that shares prev's skills, files and directories. A server
// keeps serving prev when a reload changes nothing (the ID is the same), so
// without sharing every unchanged rebuild (the first one after a watch
// starts, every poll of a tree with a symbolic link) keeps a second copy
// of every skill and directory alive until the next change.
//
// Published means more than the ID covers: the files must be the very
// objects prev published (reused because their size, times and inode are
// unchanged), and skills and directories must have the same source paths,
// findings and children, since a folder renamed under the same skill name
// or an empty directory added in a skill changes them without changing
// the ID.
func (c *Catalog) shareUnchanged(prev *Catalog) *Catalog {
	if prev == nil || c == prev || c.id != prev.id || !samePublished(c, prev) {
		return c
	}
	s := &Catalog{src: c.src, opts: c.opts, skills: prev.skills, byURI: prev.byURI, files: prev.files, dirs: prev.dirs,
		diags: c.diags, stats: c.stats, id: c.id, built: c.built, packed: prev.packed}
	if l, owner := c.src.loadListings(); owner == c {
		c.src.storeListings(l, s) // the listings describe s as well: its reload may still skip the walk
	}
	return s
}

// samePublished reports whether a and b publish the same skills, files and
// directories, files being the same objects.
func samePublished(a, b *Catalog) bool {
	if len(a.skills) != len(b.skills) || len(a.files) != len(b.files) || len(a.dirs) != len(b.dirs) {
		return false
	}
	for uri, f := range a.files {
		if b.files[uri] != f {
			return false
		}
	}
	for i, s := range a.skills {
		p := b.skills[i]
		if s.URI != p.URI || s.Root != p.Root || s.Path != p.Path || s.Name != p.Name || s.Dir != p.Dir ||
			s.Size != p.Size || !slices.Equal(s.Files, p.Files) || !slices.Equal(s.Findings, p.Findings) {
			return false
		}
	}
	for uri, d := range a.dirs {
		p := b.dirs[uri]
		if p == nil || d.Path != p.Path || (d.Skill == nil) != (p.Skill == nil) ||
			d.Skill != nil && d.Skill.URI != p.Skill.URI || !slices.Equal(d.Children, p.Children) {
			return false
		}
	}
	return true
}
