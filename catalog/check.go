package catalog

import (
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// Report is what [Check] and [CheckDir] find: every diagnostic a catalog of
// the tree would carry, and its counts.
type Report struct {
	// Diagnostics are sorted by path, as [Catalog.Diagnostics] returns them.
	Diagnostics []Diagnostic
	// Stats has the skill counts (Skills, Invalid, Skipped, Found) of the
	// catalog the tree would give. Files, Bytes and Hashed are zero: no
	// file is read but SKILL.md.
	Stats Stats
}

// CheckDir reports what [OpenDir] would publish from dir and why it would
// leave the rest out, with the same diagnostics in the same order, at a
// fraction of the cost: a validator needs every finding, not a digest of
// every file, so each file is opened and stat'ed (which is what the
// per-skill limits, hard links and unreadable files need) but only SKILL.md
// is read, and nothing is kept once counted but the diagnostics. Use it
// to check a collection; use OpenDir to serve one.
func CheckDir(dir string, opts *Options) (*Report, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer root.Close()
	return check(&source{fsys: root.FS(), root: root, dir: dir, check: true}, opts)
}

// Check is [CheckDir] for any fs.FS.
func Check(fsys fs.FS, opts *Options) (*Report, error) {
	if fsys == nil {
		return nil, fmt.Errorf("catalog: nil fs.FS")
	}
	return check(&source{fsys: fsys, check: true}, opts)
}

func check(src *source, opts *Options) (*Report, error) {
	c, err := build(src, opts, nil)
	if err != nil {
		return nil, err
	}
	return &Report{Diagnostics: c.diags, Stats: c.stats}, nil
}

// dropChecked forgets, in a check, the files of n that no finding can be
// about (opened and stat'ed without error, one link, a publishable name),
// keeping their count and size for the per-skill limits: a large tree
// holds far more files than findings. Entry files of any case stay: they
// decide what is a skill.
func (b *builder) dropChecked(n *node) {
	kept := n.files[:0]
	for _, wf := range n.files {
		if wf.done && wf.err == nil && !strings.EqualFold(wf.name, FileNameSKILL) &&
			(b.opts.AllowHardlinks || wf.ident.links() <= 1) && badFileSegment(wf.path) == "" {
			n.checked++
			n.checkedBytes += wf.size
			continue
		}
		kept = append(kept, wf)
	}
	clear(n.files[len(kept):])
	n.files = slices.Clip(kept)
}

// skillName is the skill name the frontmatter gives, "" if none.
func (e *entry) skillName() string {
	if e.checkName != "" {
		return e.checkName
	}
	return e.fm.Name()
}
