package catalog

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/skillport/skillport/internal/filemode"
	"github.com/skillport/skillport/skill"
)

// Catalog rules, for diagnostics that are not about SKILL.md contents.
const (
	RuleSymlink     = "symlink"      // a link leaving the root, or a loop
	RuleSpecialFile = "special-file" // fifo, device, socket: skipped
	RuleUnreadable  = "unreadable"   // permission denied, vanished, changing
	RuleLimit       = "limit"        // over 512 files or 16 MiB
	RuleEntryFile   = "entry-file"   // skill.md / Skill.md instead of, or beside, SKILL.md
	RulePath        = "path"         // a name that cannot be published in a URI
	RuleDuplicate   = "duplicate"    // two skills at one URI
	RuleRoot        = "root"         // a SKILL.md at the root with no prefix
	RuleHardlink    = "hardlink"     // a file with more than one hard link
)

// node is one directory of the walked tree.
type node struct {
	path string // slash path from the root, "." for the root
	real string // path with followed directory links resolved, for checking link targets
	uri  string // set by nodeURI
	// seg is the directory's URI segment and label its name in directory
	// listings, chosen by mapTree.
	seg, label string
	cand       *candidate // set when the directory is a skill
	// entryLink is the finding about a SKILL.md that is a symbolic link
	// leaving the tree or pointing nowhere.
	entryLink *Diagnostic
	files     []*walkFile
	dirs      []*node
	skillMD   *walkFile // the regular file named exactly SKILL.md, if any
	// problems that make every skill containing this directory incomplete
	broken []Diagnostic
	// warnings about entries of this directory, merged in tree order after the walk
	diags []Diagnostic
	// listing is kept for the next build (descriptor walk only)
	listing *listing
	// checked and checkedBytes count the files a check (source.check)
	// found sound and dropped from files as soon as they were stat'ed,
	// keeping only what a finding may name.
	checked      int
	checkedBytes int64
	// checkedName is the longest escaped name among them, for the URI limit.
	checkedName int
}

// dirStamp identifies a directory's state: creating, removing or renaming
// an entry changes its modification and change times.
type dirStamp struct {
	dev, ino     uint64
	mtime, ctime int64 // Unix nanoseconds
}

// racyWindow is how long a directory must have been left alone before its
// listing is trusted by later builds: file system timestamps come from a
// coarse clock, so two changes a moment apart can leave the same times,
// and a listing read between them would be kept forever.
var racyWindow = 2 * time.Second

// settled reports whether the directory was last changed well before a
// walk that started at start.
func (s dirStamp) settled(start time.Time) bool {
	limit := start.Add(-racyWindow).UnixNano()
	return s.mtime < limit && s.ctime < limit
}

// walkFile is a file found by the walk, before hashing.
type walkFile struct {
	path string
	name string
	dir  *node // the directory holding it
	// size, mtime and ident are what the last stat saw. A file found by the
	// descriptor walk is stat'ed only when it is opened (fstat on the open
	// descriptor), so outside skills they stay zero: nothing uses them there.
	size  int64
	mtime time.Time
	ident fileIdent
	// content is the tree's content id (see [ContentIdentifier]), "" if none.
	content string
	// viaLink marks a file reached through a symbolic link: it is opened
	// from the root, where os.Root resolves the link.
	viaLink bool
	// filled by hashing
	done   bool // digest, text and err are set
	digest string
	text   bool
	// mode is the permission bits the last stat saw (fs.FileMode.Perm);
	// beside text, it takes room the struct already had.
	mode   fs.FileMode
	err    error
	reused *File
	// pub is the File published for this walkFile (set by assemble); nested
	// skills share walkFiles, so it is also what makes them share Files.
	pub *File
	// entry is set for a SKILL.md only: most files are not one, and a large
	// tree holds hundreds of thousands of walkFiles at once.
	*entry
}

// entry is what a walkFile of a SKILL.md also holds: its bytes until they
// are parsed, then the parse and validation, done by the goroutine that
// read it (or taken from the previous snapshot's skill, prevSkill).
type entry struct {
	data      []byte
	parsed    bool
	fm        skill.Frontmatter
	findings  []skill.Finding
	parseErr  error
	prevSkill *Skill
	// checkName is the frontmatter's name when a check dropped the rest.
	checkName string
}

type builder struct {
	src *source
	// rootDir is the open root of the descriptor walk, nil for the
	// portable walk.
	rootDir *fdDir
	// prevListings are the directory listings the last descriptor walk of
	// this source kept; the walk records its own in each node.listing.
	prevListings map[dirKey]*listing
	listings     map[dirKey]*listing // this walk's, stored with the catalog built
	walkStart    time.Time
	opts         Options
	log          *slog.Logger
	prev         *Catalog
	prevBy       map[string]*File  // previous files by tree path
	prevSkills   map[string]*Skill // previous skills by directory
	dirty        map[string]bool
	// dirPath maps each tree directory to its URI path (no scheme), and
	// treeOf back, as mapTree chose them.
	dirPath map[string]string
	treeOf  map[string]string
	// counts of SKILL.md found, refused and skipped outside candidates
	found, refused, skipped int
	diags                   []Diagnostic
	hashed                  atomic.Int64
	reused                  atomic.Int64
}

func build(src *source, o *Options, prev *Catalog) (*Catalog, error) {
	b, start, err := newBuilder(src, o)
	if err != nil {
		return nil, err
	}
	b.prev, b.dirty = prev, src.takeDirty()
	if prev != nil {
		b.prevBy = make(map[string]*File, len(prev.files))
		for _, f := range prev.files {
			b.prevBy[f.Path] = f
		}
		b.prevSkills = make(map[string]*Skill, len(prev.skills))
		for _, s := range prev.skills {
			b.prevSkills[s.Dir] = s
		}
	}
	if src.root != nil && useFDWalk {
		if err := b.openFDRoot(); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		defer b.rootDir.close()
		var owner *Catalog
		b.prevListings, owner = src.loadListings()
		if prev != nil && owner == prev {
			if c := b.reloadUnchanged(prev); c != nil {
				c.packed = prev.packed // the same objects
				src.storeListings(b.prevListings, c)
				return b.finish(c, start), nil
			}
		}
	}
	b.walkStart = time.Now()
	root := &node{path: ".", real: "."}
	b.walkTree(root)
	// The listings are packed beside the rest of the build, which runs on
	// one core from here on.
	listings := make(chan map[dirKey]*listing, 1)
	go func() { listings <- packListings(b.listings) }()
	cands := b.candidates(root)
	b.hashAll(cands)
	b.mapTree(root)
	c := b.assemble(cands)
	c.stats.Hashed, c.stats.Reused = int(b.hashed.Load()), int(b.reused.Load())
	if l := <-listings; b.rootDir != nil {
		src.storeListings(l, c)
	}
	return b.finish(c, start), nil
}

// finish stamps a built catalog and logs its diagnostics.
func (b *builder) finish(c *Catalog, start time.Time) *Catalog {
	if !b.src.check {
		attachSignatures(c, b.src.fsys)
	}
	c.stats.Duration = time.Since(start)
	c.built = time.Now()
	for _, d := range c.diags {
		attrs := []any{"path", d.Path, "rule", d.Rule}
		if d.Line > 0 {
			attrs = append(attrs, "line", d.Line)
		}
		if d.Severity == skill.Error {
			b.log.Warn(d.Message, attrs...)
		} else {
			b.log.Debug(d.Message, attrs...)
		}
	}
	return c
}

// isAncestor reports whether directory a is d or one of its ancestors.
func isAncestor(a, d string) bool {
	return a == "." || a == d || strings.HasPrefix(d, a+"/")
}

func checkPrefix(p string) error {
	if p == "" {
		return nil
	}
	for _, seg := range strings.Split(p, "/") {
		if !validSegment(seg) {
			return fmt.Errorf("segment %q: use lowercase letters, digits, \"-\" and \".\"", seg)
		}
	}
	if strings.Split(p, "/")[0] == "index.json" {
		return errors.New(`"index.json" is reserved for the index resource`)
	}
	return nil
}

// validSegment accepts the directory names that can sit in a skill path:
// lowercase ASCII, digits, "-" and "." (a reg-name in the authority).
func validSegment(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func (b *builder) diag(d Diagnostic) { b.diags = append(b.diags, d) }

// walkTree reads the tree below root. Directories are read in parallel by
// a fixed set of goroutines taking directories from a shared stack, and the
// goroutine that reads a directory inside a skill also digests its files
// while the directory is open, so that each file (and each subdirectory) is
// opened relative to its directory instead of being resolved again from the
// root, one path component at a time. Hashing thus overlaps the walk; what
// candidates() later excludes before hashing (over the limits, incomplete)
// may have been read in vain, but no file over MaxBytes is, since its skill
// cannot pass.
func (b *builder) walkTree(root *node) {
	runStack(b.workers(), []*dirTask{{n: root}}, func() func(*dirTask) []*dirTask {
		r := newFileReader() // one per goroutine
		return func(t *dirTask) []*dirTask { return b.visit(t, r) }
	})
	// Walk diagnostics in tree order, as a serial walk finds them.
	var listings map[dirKey]*listing
	if b.rootDir != nil {
		listings = make(map[dirKey]*listing, len(b.prevListings))
	}
	var merge func(n *node)
	merge = func(n *node) {
		b.diags = append(b.diags, n.diags...)
		if n.listing != nil {
			listings[n.listing.stamp.key()] = n.listing
		}
		for _, d := range n.dirs {
			merge(d)
		}
	}
	merge(root)
	b.listings = listings
}

// useFDWalk selects the descriptor walk for trees opened with OpenDir
// where the platform has it; tests turn it off to cover the portable walk.
var useFDWalk = fdWalkSupported

// workers is how many files are read at once.
func (b *builder) workers() int {
	if b.opts.Concurrency > 0 {
		return b.opts.Concurrency
	}
	return runtime.GOMAXPROCS(0)
}

// dirTask is a directory to read.
type dirTask struct {
	n       *node
	pfd     *fdDir // the open directory holding n (descriptor walk); nil: open n from the root
	depth   int
	inLink  bool // at or below a followed directory link
	inSkill bool // a directory above holds a SKILL.md
}

// runStack runs visit on every task and on the tasks it returns, with
// workers goroutines taking tasks from a shared stack (so that the tree is
// walked depth first, which bounds how many directories are open at once),
// until no task is left. newVisit is called once per goroutine, for state
// of its own.
func runStack[T any](workers int, tasks []T, newVisit func() func(T) []T) {
	var (
		mu     sync.Mutex
		cond   = sync.NewCond(&mu)
		active int // tasks taken and not finished
		wg     sync.WaitGroup
	)
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			visit := newVisit()
			for {
				mu.Lock()
				for len(tasks) == 0 && active > 0 {
					cond.Wait()
				}
				if len(tasks) == 0 {
					mu.Unlock()
					cond.Broadcast()
					return
				}
				t := tasks[len(tasks)-1]
				tasks = tasks[:len(tasks)-1]
				active++
				mu.Unlock()

				subs := visit(t)

				mu.Lock()
				tasks = append(tasks, subs...)
				active--
				mu.Unlock()
				cond.Broadcast()
			}
		}()
	}
	wg.Wait()
}

// visit reads the directory of t, digests its files if it is inside a
// skill, and returns its subdirectories as new tasks. Off Linux, and for
// trees that are not directories, each directory and file is opened by its
// path through the tree's fs.FS (for a directory, os.Root's, which resolves
// paths inside the root only). On Linux a directory tree takes the
// descriptor walk (visitFD), which opens everything relative to its
// directory instead: measured on the 10,000-skill tree (BenchmarkOpenWalkers,
// 2 cores, warm cache), a build by paths took 3.5 s where the descriptor
// walk took 1.5 s (the WalkDir+read+hash floor: 0.9 s), and 2.9 times the
// floor's CPU time where the descriptor walk takes 2.0: os.Root resolves
// every path one component at a time, and DirEntry.Info costs an lstat per
// entry.
// unreadable records that n's directory could not be listed.
func (n *node) unreadable(err error) {
	n.broken = append(n.broken, Diagnostic{Path: n.path, Rule: RuleUnreadable, Severity: skill.Error, Err: ErrUnreadable,
		Message: fmt.Sprintf("cannot read directory: %v; fix its permissions", stripOp(err))})
}

func (b *builder) visit(t *dirTask, r *fileReader) []*dirTask {
	if b.rootDir != nil {
		return b.visitFD(t, r)
	}
	n := t.n
	entries, err := fs.ReadDir(b.src.fsys, n.path)
	if err != nil {
		n.unreadable(err)
		return nil
	}
	subs := b.readEntries(n, entries, t.depth, t.inLink, false)
	inSkill := t.inSkill || n.skillMD != nil
	if inSkill {
		for _, wf := range n.files {
			if wf.size <= b.opts.MaxBytes && !b.reuse(wf) {
				b.digest(wf, r)
			}
		}
		if b.src.check {
			b.dropChecked(n)
		}
	}
	tasks := make([]*dirTask, 0, len(subs))
	for i := len(subs) - 1; i >= 0; i-- { // popped in name order
		sub := subs[i]
		tasks = append(tasks, &dirTask{n: sub.n, depth: t.depth + 1, inLink: sub.inLink, inSkill: inSkill})
	}
	return tasks
}

// subdir is a directory found by readEntries, to be visited next.
type subdir struct {
	n      *node
	inLink bool // at or below a followed directory link
	link   bool // the entry itself is a link
}

// readEntries records the entries of directory n and returns the
// subdirectories to visit. inLink is set below a followed directory symlink:
// such links are followed once, never from inside another. With lazyStat,
// regular files are recorded without a stat: the descriptor walk stats
// them on the descriptor it reads them from.
func (b *builder) readEntries(n *node, entries []fs.DirEntry, depth int, inLink, lazyStat bool) []subdir {
	var subs []subdir
	for _, e := range entries {
		name := e.Name()
		if !b.opts.IncludeDotFiles && strings.HasPrefix(name, ".") {
			continue
		}
		p := name
		if n.path != "." {
			p = n.path + "/" + name
		}
		mode := e.Type()
		var info fs.FileInfo
		if mode&fs.ModeSymlink != 0 {
			target, err := fs.ReadLink(b.src.fsys, p)
			if err != nil && !errors.Is(err, errors.ErrUnsupported) {
				n.broken = append(n.broken, Diagnostic{Path: p, Rule: RuleSymlink, Severity: skill.Error, Err: ErrSymlinkEscape,
					Message: fmt.Sprintf("cannot read symbolic link: %v", stripOp(err))})
				continue
			}
			if err == nil && escapes(n.real, target) {
				d := Diagnostic{Path: p, Rule: RuleSymlink, Severity: skill.Error, Err: ErrSymlinkEscape,
					Message: fmt.Sprintf("symbolic link to %q leaves the served tree; replace it with a copy of the file", target)}
				n.broken = append(n.broken, d)
				if strings.EqualFold(name, FileNameSKILL) {
					n.entryLink = &d
				}
				continue
			}
			info, err = fs.Stat(b.src.fsys, p)
			if err != nil {
				rule, sentinel, msg := RuleSymlink, ErrSymlinkEscape, fmt.Sprintf("symbolic link cannot be followed inside the served tree: %v", stripOp(err))
				if errors.Is(err, fs.ErrNotExist) {
					msg = fmt.Sprintf("symbolic link to %q points nowhere; remove it", target)
				}
				d := Diagnostic{Path: p, Rule: rule, Severity: skill.Error, Err: sentinel, Message: msg}
				n.broken = append(n.broken, d)
				if strings.EqualFold(name, FileNameSKILL) {
					n.entryLink = &d
				}
				continue
			}
			if info.IsDir() {
				real := path.Join(n.real, target)
				if inLink || isAncestor(real, n.real) {
					n.broken = append(n.broken, Diagnostic{Path: p, Rule: RuleSymlink, Severity: skill.Error, Err: ErrSymlinkLoop,
						Message: "symbolic link to a directory that contains it, or inside a linked directory (links are followed once): replace it with a real directory"})
					continue
				}
				sub := &node{path: p, real: real}
				n.dirs = append(n.dirs, sub)
				if depth < DefaultMaxDepth*4 {
					subs = append(subs, subdir{n: sub, inLink: true, link: true})
				}
				continue
			}
			mode = info.Mode().Type()
		}
		switch {
		case mode.IsDir():
			real := p // the same string unless a directory link was followed above
			if n.real != n.path {
				real = path.Join(n.real, name)
			}
			sub := &node{path: p, real: real}
			n.dirs = append(n.dirs, sub)
			if depth >= DefaultMaxDepth*4 {
				sub.broken = append(sub.broken, Diagnostic{Path: p, Rule: RulePath, Severity: skill.Error, Err: ErrBadPath,
					Message: "directory nested too deeply"})
				continue
			}
			subs = append(subs, subdir{n: sub, inLink: inLink})
		case mode.IsRegular():
			viaLink := info != nil
			if info == nil && !lazyStat {
				var err error
				info, err = e.Info()
				if err != nil {
					n.broken = append(n.broken, Diagnostic{Path: p, Rule: RuleUnreadable, Severity: skill.Error, Err: ErrUnreadable,
						Message: fmt.Sprintf("cannot stat file: %v", stripOp(err))})
					continue
				}
				if !info.Mode().IsRegular() { // changed between ReadDir and Info
					continue
				}
			}
			// The name shares the path's bytes: a tree holds hundreds of
			// thousands of walkFiles until its catalog is assembled.
			wf := &walkFile{path: p, name: p[len(p)-len(name):], viaLink: viaLink, dir: n}
			if name == FileNameSKILL {
				wf.entry = &entry{}
			}
			if info != nil {
				wf.setInfo(info)
			}
			n.files = append(n.files, wf)
			if name == FileNameSKILL {
				n.skillMD = wf
			}
		default:
			msg := "not a regular file (fifo, device or socket); skipped"
			if fi, err := e.Info(); err == nil {
				if ex, ok := fi.Sys().(Explainer); ok {
					msg = ex.Explain()
				}
			}
			n.diags = append(n.diags, Diagnostic{Path: p, Rule: RuleSpecialFile, Severity: skill.Warning, Err: ErrSpecialFile,
				Message: msg})
		}
	}
	return subs
}

// candidate is a directory holding SKILL.md, before hashing decides its fate.
type candidate struct {
	n      *node
	files  []*walkFile // every file in the subtree
	broken []Diagnostic
	out    bool // excluded before hashing
	// files a check dropped (node.checked), counted for the limits
	checked      int
	checkedBytes int64
}

// candidates finds skill directories and applies the checks that need no content.
func (b *builder) candidates(root *node) []*candidate {
	var out []*candidate
	var visit func(n *node, inSkill bool)
	visit = func(n *node, inSkill bool) {
		// A folder too deep to be walked outside any skill would hide the
		// skills below it without a word: say so (inside a skill, the
		// skill reports it and is not published).
		if !inSkill && n.skillMD == nil {
			for _, d := range n.broken {
				if errors.Is(d.Err, ErrBadPath) {
					d.Severity = skill.Warning
					d.Message = fmt.Sprintf("folder nested more than %d levels below the root: it is not looked into, so a skill below it is not published; move it up", DefaultMaxDepth*4)
					b.diag(d)
				}
			}
		}
		variants := 0
		for _, f := range n.files {
			if f.name != FileNameSKILL && strings.EqualFold(f.name, FileNameSKILL) {
				variants++
			}
		}
		switch {
		case n.skillMD != nil || variants > 0 || n.entryLink != nil:
			b.found++
		}
		switch {
		case variants > 0 && n.skillMD != nil:
			b.diag(Diagnostic{Path: n.path, Skill: n.path, Rule: RuleEntryFile, Severity: skill.Error, Err: ErrAmbiguousEntry,
				Message: "both SKILL.md and a differently cased skill.md exist; keep only SKILL.md (the skill is not published)"})
			n.skillMD = nil // not a skill: ambiguous entry file
			b.refused++
		case n.skillMD == nil && n.entryLink != nil:
			d := *n.entryLink
			d.Skill = n.path
			d.Message = "SKILL.md: " + d.Message + " (the skill is not published)"
			b.diag(d)
			b.refused++
		case variants > 0:
			b.diag(Diagnostic{Path: n.path, Skill: n.path, Rule: RuleEntryFile, Severity: skill.Warning, Err: ErrAmbiguousEntry,
				Message: "found a skill.md with the wrong case; rename it to SKILL.md to publish this skill (skipped)"})
			b.skipped++
		}
		if n.skillMD != nil {
			c := &candidate{n: n}
			n.cand = c
			collect(n, c)
			out = append(out, c)
		}
		for _, d := range n.dirs {
			visit(d, inSkill || n.skillMD != nil)
		}
	}
	visit(root, false)

	for _, c := range out {
		if len(c.broken) > 0 {
			c.out = true
			for _, d := range c.broken {
				d.Skill = c.n.path
				d.Message += "; the skill is not published because its file set would be incomplete"
				b.diag(d)
			}
			continue
		}
		if nfiles := len(c.files) + c.checked; nfiles > b.opts.MaxFiles {
			c.out = true
			b.diag(Diagnostic{Path: c.n.path, Skill: c.n.path, Rule: RuleLimit, Severity: skill.Error, Err: ErrTooManyFiles,
				Message: fmt.Sprintf("skill has %d files, the limit is %d; split it or move files out", nfiles, b.opts.MaxFiles)})
			continue
		}
		total := c.checkedBytes
		for _, f := range c.files {
			total += f.size
		}
		if total > b.opts.MaxBytes {
			c.out = true
			b.diag(Diagnostic{Path: c.n.path, Skill: c.n.path, Rule: RuleLimit, Severity: skill.Error, Err: ErrTooLarge,
				Message: fmt.Sprintf("skill totals %d bytes, the limit is %d; move large assets out", total, b.opts.MaxBytes)})
		}
	}
	return out
}

func collect(n *node, c *candidate) {
	c.files = append(c.files, n.files...)
	c.broken = append(c.broken, n.broken...)
	c.checked += n.checked
	c.checkedBytes += n.checkedBytes
	for _, d := range n.dirs {
		collect(d, c)
	}
}

// modeOf is what the catalog records of f's mode ([File.Mode]). Windows
// reports no execute bit for any file, so a directory there records none
// and the "#!" rule decides, as it does for sources without modes.
func (b *builder) modeOf(f *walkFile) fs.FileMode {
	if runtime.GOOS == "windows" && b.src.dir != "" {
		return 0
	}
	return filemode.FromPerm(f.mode)
}

// assemble turns hashed candidates into the immutable catalog.
func (b *builder) assemble(cands []*candidate) *Catalog {
	nfiles := 0
	for _, cand := range cands {
		if !cand.out {
			nfiles += len(cand.files)
		}
	}
	c := &Catalog{src: b.src, opts: b.opts, byURI: make(map[string]*Skill, len(cands)),
		files: make(map[string]*File, nfiles), dirs: make(map[string]*Dir, len(b.dirPath))}
	fileFor := func(wf *walkFile) *File {
		if wf.pub != nil {
			return wf.pub
		}
		uri := b.fileURI(wf)
		// A reused file keeps its object only where its URI is unchanged: a
		// skill renamed by its SKILL.md moves every file's URI.
		if wf.reused != nil && wf.reused.URI == uri {
			wf.pub = wf.reused
			return wf.reused
		}
		f := &File{
			URI:      uri,
			Path:     wf.path,
			Name:     wf.name,
			Size:     wf.size,
			Digest:   wf.digest,
			MIMEType: mimeType(wf.name, wf.text),
			Text:     wf.text,
			Mode:     b.modeOf(wf),
			ModTime:  wf.mtime,
			ident:    wf.ident,
			content:  wf.content,
		}
		wf.pub = f
		return f
	}

	for _, cand := range cands {
		if cand.out {
			c.stats.Invalid++
			continue
		}
		s, ok := b.skillFor(cand)
		if !ok {
			c.stats.Invalid++
			continue
		}
		if s == nil { // filtered out
			c.stats.Skipped++
			continue
		}
		if other := c.byURI[s.URI]; other != nil {
			c.stats.Invalid++
			b.diag(Diagnostic{Path: cand.n.path, Skill: cand.n.path, Rule: RuleDuplicate, Severity: skill.Error, Err: ErrDuplicateURI,
				Message: fmt.Sprintf("%s is already served from %s", s.URI, other.Dir)})
			continue
		}
		if long, why := b.longURI(s.URI, cand); why != "" {
			// Every host refuses such an entry (skilluri): publishing it
			// would list a skill no consumer can use.
			c.stats.Invalid++
			b.diag(Diagnostic{Path: long, Skill: cand.n.path, Rule: RuleLimit, Severity: skill.Error, Err: ErrURITooLong,
				Message: why + " (the skill is not published)"})
			continue
		}
		for _, wf := range cand.files {
			if b.src.check {
				break // only counted: no file is published
			}
			f := fileFor(wf)
			s.Files = append(s.Files, f)
			s.Size += f.Size
		}
		slices.SortFunc(s.Files, func(a, x *File) int {
			if a.URI == s.URI {
				return -1
			}
			if x.URI == s.URI {
				return 1
			}
			return cmp.Compare(a.URI, x.URI)
		})
		c.byURI[s.URI] = s
		c.skills = append(c.skills, s)
	}
	slices.SortFunc(c.skills, func(a, x *Skill) int { return cmp.Compare(a.URI, x.URI) })

	for _, s := range c.skills {
		for _, f := range s.Files {
			if c.files[f.URI] == nil {
				c.files[f.URI] = f
				c.stats.Files++
				c.stats.Bytes += f.Size
			}
		}
	}
	// The digest of the snapshot and the sorting of diagnostics only read
	// the skills and files: both are done while the directories are built.
	var wg sync.WaitGroup
	if !b.src.check {
		wg.Go(func() { c.id = catalogID(c) })
	}
	wg.Go(func() {
		slices.SortStableFunc(b.diags, func(a, x Diagnostic) int {
			return cmp.Or(cmp.Compare(a.Path, x.Path), cmp.Compare(a.Line, x.Line), cmp.Compare(a.Column, x.Column))
		})
	})
	if !b.src.check {
		b.buildDirs(c, cands)
	}
	wg.Wait()
	c.stats.Skills = len(c.skills)
	c.stats.Invalid += b.refused
	c.stats.Skipped += b.skipped
	c.stats.Found = b.found
	c.diags = b.diags
	if !b.src.check && (b.prev != nil || !b.opts.PackLater) {
		c.compact(b.prev)
		c.packed = true
	}
	return c
}

// skillFor parses and validates a candidate's SKILL.md. It returns ok=false
// when the skill is invalid (diagnostics recorded), and a nil skill when the
// filter left it out.
func (b *builder) skillFor(cand *candidate) (*Skill, bool) {
	n := cand.n
	md := n.skillMD
	for _, wf := range cand.files {
		if wf.err != nil {
			rule := RuleUnreadable
			b.diag(Diagnostic{Path: wf.path, Skill: n.path, Rule: rule, Severity: skill.Error, Err: wf.err,
				Message: fmt.Sprintf("%v; the skill is not published", wf.err)})
			return nil, false
		}
	}
	for _, wf := range cand.files {
		if wf.ident.links() > 1 && !b.opts.AllowHardlinks {
			b.diag(Diagnostic{Path: wf.path, Skill: n.path, Rule: RuleHardlink, Severity: skill.Error, Err: ErrHardlink,
				Message: fmt.Sprintf("file has %d hard links, so its content may be a file outside the tree; copy it instead, or serve with --allow-hardlinks (the skill is not published)", wf.ident.links())})
			return nil, false
		}
	}
	skillPath := b.dirPath[n.path]
	if first, _, _ := strings.Cut(skillPath, "/"); first == "index.json" {
		b.diag(Diagnostic{Path: n.path, Skill: n.path, Rule: RulePath, Severity: skill.Error, Err: ErrBadPath,
			Message: `"index.json" is reserved for the index resource and cannot start a skill path`})
		return nil, false
	}
	var twins map[string]string // NFC path -> file path, once a name is not ASCII
	for _, wf := range cand.files {
		rel := wf.path // below n: n.path, "/", then rel
		if n.path != "." {
			rel = wf.path[len(n.path)+1:]
		}
		if bad := badFileSegment(rel); bad != "" {
			b.diag(Diagnostic{Path: wf.path, Skill: n.path, Rule: RulePath, Severity: skill.Error, Err: ErrBadPath,
				Message: fmt.Sprintf("file name %q contains %s and cannot be served in a URI; rename it (the skill is not published)", path.Base(wf.path), bad)})
			return nil, false
		}
		if twins == nil && isASCII(rel) {
			continue
		}
		if twins == nil {
			twins = map[string]string{}
			for _, o := range cand.files { // the ASCII ones seen so far are their own key
				if o == wf {
					break
				}
				twins[o.path] = o.path
			}
		}
		k := norm.NFC.String(wf.path)
		if o, dup := twins[k]; dup && o != wf.path {
			b.diag(Diagnostic{Path: wf.path, Skill: n.path, Rule: RuleDuplicate, Severity: skill.Error, Err: ErrDuplicateURI,
				Message: fmt.Sprintf("%q and %q differ only in Unicode normalization (NFC/NFD): they look the same on every page and listing; rename one of them (the skill is not published)", o, wf.path)})
			return nil, false
		}
		twins[k] = wf.path
	}

	if !md.parsed {
		b.parse(md, nil)
	}
	if err := md.parseErr; err != nil {
		d := Diagnostic{Path: md.path, Skill: n.path, Severity: skill.Error, Err: fmt.Errorf("%w: %w", ErrInvalidSkill, err), Message: err.Error()}
		var pe *skill.ParseError
		if errors.As(err, &pe) {
			d.Rule, d.Line, d.Column, d.Message = pe.Rule, pe.Line, pe.Column, pe.Msg
		}
		b.diag(d)
		return nil, false
	}
	var warnings []skill.Finding
	invalid := false
	for _, f := range md.findings {
		sentinel := error(nil)
		if f.Severity == skill.Error {
			invalid = true
			sentinel = ErrInvalidSkill
		} else {
			warnings = append(warnings, f)
		}
		b.diag(Diagnostic{Path: md.path, Skill: n.path, Line: f.Line, Column: f.Column, Rule: f.Rule, Severity: f.Severity, Message: f.Message, Err: sentinel})
	}
	if invalid {
		return nil, false
	}
	if skillPath == "" {
		b.diag(Diagnostic{Path: md.path, Skill: n.path, Rule: RuleRoot, Severity: skill.Error, Err: ErrBadPath,
			Message: "SKILL.md at the root of the tree: serve its parent directory, or set a prefix naming the skill"})
		return nil, false
	}
	if b.opts.Filter != nil && !b.opts.Filter(skillPath, md.fm) {
		return nil, true
	}
	uri := b.fileURI(md)
	if b.src.check { // counted, not served: keep what the duplicate check needs
		md.fm, md.findings = skill.Frontmatter{}, nil
		return &Skill{URI: uri, Dir: n.path}, true
	}
	return &Skill{
		URI:         uri,
		Root:        strings.TrimSuffix(uri, "/"+FileNameSKILL),
		Path:        skillPath,
		Name:        md.skillName(),
		Dir:         n.path,
		Frontmatter: md.fm,
		Findings:    warnings,
	}, true
}

// badFileSegment names what makes a relative file path unpublishable, or "".
func badFileSegment(rel string) string {
	for _, r := range rel { // "/" between segments is none of these
		switch {
		case r == '\\':
			return "a backslash"
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			return "a control character"
		case r == 0xFFFD:
			return "invalid UTF-8"
		}
	}
	return ""
}

// buildDirs creates the directory resources: every directory of every
// published skill, and the prefix levels above them.
func (b *builder) buildDirs(c *Catalog, cands []*candidate) {
	add := func(d *Dir) *Dir {
		if old := c.dirs[d.URI]; old != nil {
			return old
		}
		c.dirs[d.URI] = d
		return d
	}
	for _, cand := range cands {
		s := c.byURI[b.fileURI(cand.n.skillMD)]
		if s == nil || s.Dir != cand.n.path {
			continue
		}
		var visit func(n *node)
		visit = func(n *node) {
			d := add(&Dir{URI: b.nodeURI(n), Path: n.path})
			// The innermost skill wins: candidates are visited parent first.
			d.Skill = s
			if len(d.Children) == 0 {
				d.Children = make([]Child, 0, len(n.files)+len(n.dirs))
				for _, wf := range n.files {
					if f := wf.pub; f != nil && c.files[f.URI] == f {
						d.Children = append(d.Children, Child{URI: f.URI, Name: wf.name, File: f})
					}
				}
				for _, sub := range n.dirs {
					d.Children = append(d.Children, Child{URI: b.nodeURI(sub), Name: sub.label})
				}
				slices.SortFunc(d.Children, func(a, x Child) int { return cmp.Compare(a.Name, x.Name) })
			}
			for _, sub := range n.dirs {
				visit(sub)
			}
		}
		visit(cand.n)
	}
	// Prefix levels: the ancestors of each skill root, down from the first
	// segment. Children are gathered first and sorted once per level, since
	// one level may hold every skill.
	type level struct {
		d    *Dir
		seen map[string]bool
	}
	levels := map[string]*level{}
	var order []*level
	for _, s := range c.skills {
		segs := strings.Split(s.Path, "/")
		for i := len(segs) - 1; i >= 1; i-- {
			parentURI := b.opts.Scheme + "://" + strings.Join(segs[:i], "/")
			childURI := b.opts.Scheme + "://" + strings.Join(segs[:i+1], "/")
			parent := c.dirs[parentURI]
			if parent == nil {
				treePath, ok := b.treeOf[strings.Join(segs[:i], "/")]
				if !ok {
					treePath = "."
				}
				parent = add(&Dir{URI: parentURI, Path: treePath})
			}
			if parent.Skill != nil {
				continue // inside a skill: already complete
			}
			l := levels[parentURI]
			if l == nil {
				l = &level{d: parent, seen: map[string]bool{}}
				for _, ch := range parent.Children {
					l.seen[ch.URI] = true
				}
				levels[parentURI] = l
				order = append(order, l)
			}
			if !l.seen[childURI] {
				l.seen[childURI] = true
				parent.Children = append(parent.Children, Child{URI: childURI, Name: segs[i]})
			}
		}
	}
	for _, l := range order {
		slices.SortFunc(l.d.Children, func(a, x Child) int { return cmp.Compare(a.Name, x.Name) })
	}
}

// fileURI maps a walked file to its resource URI: its directory's URI
// (as mapTree chose it) and its escaped name, in one allocation.
func (b *builder) fileURI(f *walkFile) string {
	d := b.nodeURI(f.dir)
	if len(d) == len(b.opts.Scheme)+len("://") { // the root, with no prefix
		return d + escapeSegment(f.name)
	}
	return d + "/" + escapeSegment(f.name)
}

// nodeURI maps a directory to its resource URI, computed once per directory.
func (b *builder) nodeURI(n *node) string {
	if n.uri == "" {
		n.uri = b.opts.Scheme + "://" + b.dirPath[n.path]
	}
	return n.uri
}

// catalogID digests everything a client can observe of the snapshot.
func catalogID(c *Catalog) string {
	h := sha256.New()
	var buf []byte
	for _, s := range c.skills {
		buf = append(buf[:0], s.URI...)
		buf = append(buf, 0)
		buf = append(buf, s.Frontmatter.JSON()...)
		buf = append(buf, '\n')
		for _, f := range s.Files {
			buf = append(buf, '\t')
			buf = append(buf, f.URI...)
			buf = append(buf, 0)
			buf = append(buf, f.Digest...)
			buf = append(buf, 0)
			buf = strconv.AppendInt(buf, f.Size, 10)
			if f.Mode&0o111 != 0 {
				// chmod +x alone changes what an archive holds. Only the
				// executable mark is hashed, so a tree without one (and
				// every source that records no mode) keeps its ID.
				buf = append(buf, "\x00x"...)
			}
			buf = append(buf, '\n')
		}
		if len(s.Signature) > 0 { // a new bundle is a new snapshot
			buf = append(buf, "\tsignature\x00"...)
			buf = append(buf, s.Signature...)
		}
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// stripOp drops the "open x:" style prefix of *fs.PathError, whose path we print ourselves.
func stripOp(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// longURI returns the path of the first file of cand (or the skill itself,
// at uri) whose URI hosts refuse, over MaxURILength bytes or
// skill.MaxURISegments segments, and why; "" when every URI is within
// both. A URI is only built when its directory's URI and three bytes per
// name byte (the most escaping adds) could pass the length.
func (b *builder) longURI(uri string, cand *candidate) (long, why string) {
	tooLong := func(n int) string {
		return fmt.Sprintf("its URI is %d bytes, over the %d-byte limit hosts accept; shorten the folder or file names", n, MaxURILength)
	}
	tooDeep := func(n int) string {
		return fmt.Sprintf("its URI has %d segments, over the %d hosts accept; flatten its folders", n, skill.MaxURISegments)
	}
	segments := func(u string) int {
		_, rest, _ := strings.Cut(u, "://")
		return strings.Count(rest, "/") + 1
	}
	if len(uri) > MaxURILength {
		return cand.n.path, tooLong(len(uri))
	}
	root := strings.TrimSuffix(uri, FileNameSKILL)
	for _, wf := range cand.files {
		d := b.nodeURI(wf.dir)
		if len(d)+1+3*len(wf.name) > MaxURILength {
			if u := b.fileURI(wf); len(u) > MaxURILength {
				return wf.path, tooLong(len(u))
			}
		}
		if n := segments(d) + 1; n > skill.MaxURISegments {
			return wf.path, tooDeep(n)
		}
	}
	if b.src.check {
		// A check keeps counts, not files, and maps no folder inside a
		// skill: the longest name of each folder, under the skill's URI.
		var walk func(n *node, l, segs int) (string, string)
		walk = func(n *node, l, segs int) (string, string) {
			if n.checkedName > 0 {
				if l+n.checkedName > MaxURILength {
					return n.path, tooLong(l + n.checkedName)
				}
				if segs > skill.MaxURISegments {
					return n.path, tooDeep(segs)
				}
			}
			for _, d := range n.dirs {
				if p, why := walk(d, l+escapedLen(path.Base(d.path))+1, segs+1); why != "" {
					return p, why
				}
			}
			return "", ""
		}
		return walk(cand.n, len(root), segments(root))
	}
	return "", ""
}

// escapedLen is len(escapeSegment(name)), without building it: what
// url.PathEscape leaves is one byte, the rest three.
func escapedLen(name string) int {
	n := 0
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~', c == '$', c == '&', c == '+', c == ':', c == '=', c == '@':
			n++
		default:
			n += 3
		}
	}
	return n
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
