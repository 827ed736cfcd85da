package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/skillport/skillport/skill"
)

// The URI of a file is chosen directory by directory, from the root down
// (SEP-2640 lets the server choose every segment but the last of a skill
// path, which must be the skill's name):
//
//   - a skill directory's segment is its name, when the name is valid: a
//     folder renamed by an aggregator ("docker-compose-gen" holding
//     "name: compose-gen") is published as .../compose-gen/SKILL.md;
//   - a directory inside a skill keeps its name, percent-encoded where a
//     URI needs it;
//   - a directory above skills becomes a prefix segment: the first one is
//     the URI authority, a reg-name that is case-insensitive, so it is
//     lowercased and any character other than a-z, 0-9, "-", ".", "_" and
//     "~" becomes "-" ("ComposioHQ--awesome" → "composiohq--awesome",
//     "user@collection" → "user-collection", "ja-JP" → "ja-jp"; a name
//     left with no letter or digit becomes "u-" and 8 hex digits of its
//     SHA-256); deeper ones are percent-encoded path segments.
//
// Two directories of one parent that map to the same segment are both
// refused, every skill in them, with a diagnostic naming both: a URI never
// depends on which of them the walk met first.

// mapTree chooses the URI path of every directory.
func (b *builder) mapTree(root *node) {
	var count func(n *node) int
	count = func(n *node) int {
		k := 1
		for _, d := range n.dirs {
			k += count(d)
		}
		return k
	}
	ndirs := count(root)
	b.dirPath = make(map[string]string, ndirs)
	b.treeOf = make(map[string]string, ndirs)
	p := b.opts.Prefix
	if name := b.publishName(root); name != "" {
		// A root skill: the last prefix segment, if any, is its folder.
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			p = p[:i+1] + name
		} else {
			p = name
		}
	}
	b.mapDir(root, p, root.cand != nil)
}

// mapDir maps n, at URI path p, and the directories below it, and reports
// whether any of them holds a published skill.
func (b *builder) mapDir(n *node, p string, inSkill bool) bool {
	switch {
	case !b.src.check:
		b.dirPath[n.path] = p
		if _, ok := b.treeOf[p]; !ok {
			b.treeOf[p] = n.path
		}
	case n.cand != nil:
		// A check looks up skill directories only (skillFor, uri of a
		// SKILL.md): a large tree has four times as many directories.
		b.dirPath[n.path] = p
	}
	published := n.cand != nil && !n.cand.out
	if len(n.dirs) == 0 {
		return published
	}
	// Most directories have a few subdirectories: they are compared
	// pairwise, without a map each.
	var bySeg map[string]*node
	if len(n.dirs) > 8 {
		bySeg = make(map[string]*node, len(n.dirs))
	}
	for i, d := range n.dirs {
		d.seg, d.label = b.segment(d, p == "", inSkill)
		var other *node
		if bySeg != nil {
			k := twinKey(d.seg)
			other = bySeg[k]
			if other == nil {
				bySeg[k] = d
			}
		} else {
			for _, o := range n.dirs[:i] {
				if o.seg == d.seg || twinKey(o.seg) == twinKey(d.seg) { // the first, as the map keeps
					other = o
					break
				}
			}
		}
		switch {
		case other == nil:
		case other.seg == d.seg:
			b.collide(other, d, fmt.Sprintf("would both be published at %s://%s", b.opts.Scheme, joinURIPath(p, d.seg)))
		default:
			b.collide(other, d, "differ only in Unicode normalization (NFC/NFD): they look the same on every page and listing")
		}
	}
	for _, d := range n.dirs {
		sub := joinURIPath(p, d.seg)
		if !b.mapDir(d, sub, inSkill || d.cand != nil) {
			continue
		}
		published = true
		if !inSkill && d.cand == nil && d.seg != path.Base(d.path) {
			b.diag(Diagnostic{Path: d.path, Rule: RulePath, Severity: skill.Warning,
				Message: fmt.Sprintf("folder name %q is mapped to the URI segment %q: the skills below it are published under %s://%s/", path.Base(d.path), d.seg, b.opts.Scheme, sub)})
		}
	}
	return published
}

func joinURIPath(p, seg string) string {
	if p == "" {
		return seg
	}
	return p + "/" + seg
}

// segment returns the URI segment of directory d and its name in
// directory listings.
func (b *builder) segment(d *node, first, inSkill bool) (seg, label string) {
	if name := b.publishName(d); name != "" {
		return name, name
	}
	base := path.Base(d.path)
	if inSkill {
		return escapeSegment(base), base
	}
	seg = prefixSegment(base, first)
	return seg, seg
}

// prefixSegment maps a directory name above skills to a URI segment.
func prefixSegment(name string, first bool) string {
	if !first {
		return escapeSegment(name)
	}
	var sb strings.Builder
	alnum := false
	for _, r := range name {
		switch {
		case r >= 'A' && r <= 'Z':
			sb.WriteRune(r + ('a' - 'A'))
			alnum = true
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			sb.WriteRune(r)
			alnum = true
		case r == '-', r == '.', r == '_', r == '~':
			sb.WriteRune(r)
		default:
			sb.WriteByte('-')
		}
	}
	if !alnum {
		sum := sha256.Sum256([]byte(name))
		return "u-" + hex.EncodeToString(sum[:4])
	}
	return sb.String()
}

// publishName returns the name directory n's skill is published under, or
// "" when n is not a skill or its name cannot be used (the skill is then
// refused by its own findings, and its folder name maps like any other).
func (b *builder) publishName(n *node) string {
	c := n.cand
	if c == nil || c.out {
		return ""
	}
	md := n.skillMD
	if !md.parsed && md.done && md.err == nil {
		b.parse(md, nil)
	}
	if !md.parsed || md.parseErr != nil {
		return ""
	}
	name := md.skillName()
	if skill.ValidName(name) != nil {
		return ""
	}
	if b.opts.Strict {
		if folder := b.folderName(n.path); folder != "" && folder != name {
			return ""
		}
	}
	return name
}

// folderName is the name of tree directory dir as a host loading from disk
// would see it: the directory's own name, or for the root the last segment
// of the prefix or the name of the directory served; "" if unknown.
func (b *builder) folderName(dir string) string {
	if dir != "." {
		return path.Base(dir)
	}
	if p := b.opts.Prefix; p != "" {
		return path.Base(p)
	}
	if b.src.dir != "" {
		if abs, err := filepath.Abs(b.src.dir); err == nil {
			return filepath.Base(abs)
		}
	}
	return ""
}

// collide refuses every skill under a and d, two directories of one parent
// that map to the same URI path p.
func (b *builder) collide(a, d *node, why string) {
	msg := fmt.Sprintf("%q and %q %s; rename one of them (neither is published)", a.path, d.path, why)
	for _, n := range []*node{a, d} {
		var refuse func(n *node)
		refuse = func(n *node) {
			if c := n.cand; c != nil && !c.out {
				c.out = true
				b.diag(Diagnostic{Path: n.path, Skill: n.path, Rule: RuleDuplicate, Severity: skill.Error, Err: ErrDuplicateURI, Message: msg})
			}
			for _, sub := range n.dirs {
				refuse(sub)
			}
		}
		refuse(n)
	}
}

// twinKey is what two names must differ in to be told apart by a reader:
// a URI segment percent-decoded and put in Unicode normalization form C,
// so that "café" typed on macOS (NFD) and on Linux (NFC), different bytes
// and different URIs, are found to be twins. Segments without escapes
// (ASCII) are their own key.
func twinKey(seg string) string {
	if !strings.Contains(seg, "%") {
		return seg
	}
	return norm.NFC.String(decodeSegment(seg))
}
