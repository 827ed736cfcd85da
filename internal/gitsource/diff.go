package gitsource

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/skillport/skillport/catalog"
)

// changedSince lists the paths where f's tree differs from old's, for
// [catalog.Catalog.ReloadChanged]: subtrees with equal ids are equal and
// skipped without being read, and the comparison stops at a folder that
// holds a SKILL.md on either side (a skill is rebuilt whole, since its
// files include those of every folder below it). "." means the root itself
// is such a folder.
func (f *FS) changedSince(old *FS) ([]string, error) {
	var out []string
	var walk func(o, n plumbing.Hash, p string) error
	walk = func(o, n plumbing.Hash, p string) error {
		ot, err := old.tree(o)
		if err != nil {
			return err
		}
		nt, err := f.tree(n)
		if err != nil {
			return err
		}
		if skillLike(ot) || skillLike(nt) {
			out = append(out, p)
			return nil
		}
		join := func(name string) string {
			if p == "." {
				return name
			}
			return p + "/" + name
		}
		for i, ne := range nt.Entries {
			j, ok := ot.find(ne.Name)
			if !ok {
				out = append(out, join(ne.Name))
				continue
			}
			oe := ot.Entries[j]
			switch {
			case oe.Hash == ne.Hash && oe.Mode == ne.Mode:
			case oe.Mode == filemode.Dir && ne.Mode == filemode.Dir:
				if err := walk(oe.Hash, ne.Hash, join(ne.Name)); err != nil {
					return err
				}
			default:
				out = append(out, join(nt.Entries[i].Name))
			}
		}
		for _, oe := range ot.Entries {
			if _, ok := nt.find(oe.Name); !ok {
				out = append(out, join(oe.Name))
			}
		}
		return nil
	}
	if f.root == old.root {
		return nil, nil
	}
	if err := walk(old.root, f.root, "."); err != nil {
		return nil, err
	}
	return out, nil
}

// skillLike reports whether a tree holds an entry named SKILL.md in any
// case: the catalog treats its folder as a skill, or reports it as one.
func skillLike(t *treeIndex) bool {
	for _, e := range t.Entries {
		if len(e.Name) == len(catalog.FileNameSKILL) && strings.EqualFold(e.Name, catalog.FileNameSKILL) {
			return true
		}
	}
	return false
}
