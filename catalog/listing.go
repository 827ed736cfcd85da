package catalog

import (
	"io/fs"
	"os"
	"strings"
)

// listing is a directory's entries as the descriptor walk read them, kept
// by the source so that a later build can skip reading a directory whose
// stamp is unchanged. A served tree keeps one per directory for as long as
// it is served, so the entries are packed: the names in one string and,
// per entry, where its name ends and its type. As fs.DirEntry values from
// os.File.ReadDir they cost an object, a name and an interface slot each,
// about 100 bytes where packed they take the name and 8; on the
// 21,066-skill real-world tree (82,000 directories) that was 30 MB of a
// 120 MB live heap, in half a million objects.
type listing struct {
	stamp dirStamp
	names string      // the entries' names, sorted, concatenated
	ents  []listedEnt // shared, never modified
}

// listedEnt is where an entry's name ends in listing.names, and its type.
type listedEnt struct {
	end uint32
	typ fs.FileMode
}

// newListing packs entries, sorted by name. It returns nil when the names
// do not fit its offsets (over 4 GiB of names in one directory): such a
// directory is read again by every build.
func newListing(stamp dirStamp, entries []fs.DirEntry) *listing {
	n := 0
	for _, e := range entries {
		n += len(e.Name())
	}
	if uint64(n) > uint64(^uint32(0)) {
		return nil
	}
	var names strings.Builder
	names.Grow(n)
	l := &listing{stamp: stamp, ents: make([]listedEnt, len(entries))}
	for i, e := range entries {
		names.WriteString(e.Name())
		l.ents[i] = listedEnt{end: uint32(names.Len()), typ: e.Type()}
	}
	l.names = names.String()
	return l
}

// len is the number of entries.
func (l *listing) len() int { return len(l.ents) }

// name is the name of entry i; it shares the listing's memory.
func (l *listing) name(i int) string {
	start := uint32(0)
	if i > 0 {
		start = l.ents[i-1].end
	}
	return l.names[start:l.ents[i].end]
}

// typ is the type of entry i.
func (l *listing) typ(i int) fs.FileMode { return l.ents[i].typ }

// dirEntries unpacks the listing of directory dir of root for a walk: two
// allocations for the whole directory, names shared with the listing.
func (l *listing) dirEntries(root *os.Root, dir string) []fs.DirEntry {
	ents := make([]listedEntry, len(l.ents))
	out := make([]fs.DirEntry, len(l.ents))
	for i := range l.ents {
		ents[i] = listedEntry{name: l.name(i), typ: l.ents[i].typ, root: root, dir: dir}
		out[i] = &ents[i]
	}
	return out
}

// listedEntry is an entry of a kept listing, as a walk reads it.
type listedEntry struct {
	name string
	typ  fs.FileMode
	root *os.Root
	dir  string
}

func (e *listedEntry) Name() string      { return e.name }
func (e *listedEntry) IsDir() bool       { return e.typ.IsDir() }
func (e *listedEntry) Type() fs.FileMode { return e.typ }
func (e *listedEntry) String() string    { return fs.FormatDirEntry(e) }

// Info stats the entry now, without following a link, as os.DirEntry's
// Info does for an entry whose type getdents gave.
func (e *listedEntry) Info() (fs.FileInfo, error) {
	p := e.name
	if e.dir != "." {
		p = e.dir + "/" + e.name
	}
	return e.root.Lstat(p)
}

// dirKey is a directory's device and inode, which key the listings a
// source keeps.
type dirKey struct{ dev, ino uint64 }

func (s dirStamp) key() dirKey { return dirKey{s.dev, s.ino} }

// packListings copies the listings a walk kept, which it allocated one
// directory at a time among its garbage, into a few large allocations:
// the listings in one slice, their entries in another, names in strings of
// packChunk directories each. Left where the walk made them, the 82,000
// listings of the real-world tree pinned pages of garbage that the
// runtime could not give back.
func packListings(m map[dirKey]*listing) map[dirKey]*listing {
	if m == nil {
		return nil
	}
	keys := make([]dirKey, 0, len(m))
	nents := 0
	for k, l := range m {
		keys = append(keys, k)
		nents += len(l.ents)
	}
	slab := make([]listing, len(keys))
	ents := make([]listedEnt, nents)
	out := make(map[dirKey]*listing, len(keys))
	var pack stringPack
	for lo := 0; lo < len(keys); lo += packChunk {
		chunk := keys[lo:min(lo+packChunk, len(keys))]
		pack.reset()
		for _, k := range chunk {
			pack.add(m[k].names)
		}
		all := pack.done()
		for i, k := range chunk {
			l := m[k]
			nl := &slab[lo+i]
			nl.stamp = l.stamp
			nl.names = pack.get(all, i)
			n := len(l.ents)
			nl.ents = ents[:n:n]
			ents = ents[n:]
			copy(nl.ents, l.ents)
			out[k] = nl
		}
	}
	return out
}
