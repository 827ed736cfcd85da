package catalog

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"
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
// every file, so only SKILL.md is read, every other file of a skill is
// stat'ed (which is what the per-skill limits and hard links need) and
// opened only where the stat cannot prove the open would succeed (on
// Linux; elsewhere every file is opened), and nothing is kept once counted
// but the diagnostics. Use it to check a collection; use OpenDir to serve
// one.
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
	var c *Catalog
	var err error
	if src.root != nil && useFDWalk {
		c, err = checkFD(src, opts)
	} else {
		c, err = build(src, opts, nil)
	}
	if err != nil {
		return nil, err
	}
	return &Report{Diagnostics: c.diags, Stats: c.stats}, nil
}

// newBuilder is the start of a build or a check: the options with their
// defaults, and the root checked to be a directory.
func newBuilder(src *source, o *Options) (*builder, time.Time, error) {
	start := time.Now()
	opts := Options{}
	if o != nil {
		opts = *o
	}
	if opts.Scheme == "" {
		opts.Scheme = DefaultScheme
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if err := checkPrefix(opts.Prefix); err != nil {
		return nil, start, fmt.Errorf("catalog: prefix %q: %w", opts.Prefix, err)
	}
	b := &builder{src: src, opts: opts, log: opts.Logger}
	if b.log == nil {
		b.log = slog.Default()
	}
	rootInfo, err := fs.Stat(src.fsys, ".")
	if err != nil {
		return nil, start, fmt.Errorf("catalog: %w", err)
	}
	if !rootInfo.IsDir() {
		return nil, start, fmt.Errorf("catalog: the root is not a directory")
	}
	return b, start, nil
}

// checkTail is the end of build for a check, once the walk has filled the
// tree below root: walk diagnostics in tree order, then candidates, the
// files the walk left, URIs and the counts.
func (b *builder) checkTail(root *node, start time.Time) *Catalog {
	var merge func(n *node)
	merge = func(n *node) {
		b.diags = append(b.diags, n.diags...)
		for _, d := range n.dirs {
			merge(d)
		}
	}
	merge(root)
	cands := b.candidates(root)
	b.hashAll(cands)
	b.mapTree(root)
	return b.finish(b.assemble(cands), start)
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
			n.checkedName = max(n.checkedName, escapedLen(wf.name))
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
