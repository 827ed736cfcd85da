package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/internal/install"
	"github.com/skillport/skillport/internal/ociref"
	"github.com/skillport/skillport/skill"
)

// installFlags are the flags of install, check and remove.
type installFlags struct {
	agents  []string
	project bool
	frozen  bool
	only    []string
	force   bool
	timeout time.Duration
	// outdated: compare the lock with its sources and report, writing
	// nothing (skillport outdated).
	outdated bool
	// trust is --trusted-key / --trust-policy (docs/signing.md).
	trust trustFlag
	// allowSignerChange accepts a skill signed by someone other than the
	// signer skills.lock records.
	allowSignerChange bool
}

func init() {
	var o installFlags
	cmd := &cobra.Command{
		Use:   "install [flags] [SOURCE...] [-- COMMAND [ARGS...]]",
		Short: "Install skills into agents' skill folders, recorded in skills.lock",
		Long: `install writes skills into the skill folders agents read (Claude Code,
Cursor, Codex, Gemini CLI, Goose, VS Code/Copilot, OpenCode, .agents/skills),
after the host has verified every file (size, SHA-256, SKILL.md frontmatter).
Nothing is executed. Each skill folder appears in one step (staged beside it
and renamed), and skills.lock records every file's SHA-256 and size, the
source, what it resolved to and where the skill went.

A SOURCE is a folder of skills, an MCP server URL, git+URL[@REF][#SUBDIR], or
a server command after --.

  skillport install ./skills --agent claude-code --agent cursor
  skillport install http://127.0.0.1:8080/mcp --project --skill refunds
  skillport install            # restore exactly what skills.lock says
  skillport install --frozen   # in CI: fail on any difference, never write the lock

User scope (the default) writes under the home directory and keeps
skills.lock in the user configuration directory (skillport/skills.lock);
--project writes under the current directory and keeps skills.lock there.
Without --agent, the agents whose folders exist are chosen.

With no SOURCE, every skill of the lock is fetched again from its recorded
source and must match the lock byte for byte; any difference (a changed,
added or removed file, a git ref that moved) is refused, naming the skill,
the file and both digests, and nothing is written. --frozen (or CI=true)
applies the same rule to a SOURCE given, and never rewrites the lock.

Exit status: 0 when every skill was installed or up to date, 1 when one was
not (or the lock differs), 2 on usage errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var command []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				args, command = args[:dash], args[dash:]
				if len(command) == 0 {
					return usageErrorf("install: name the server command after --, e.g. skillport install -- node server.mjs")
				}
			}
			if os.Getenv("CI") == "true" {
				o.frozen = true
			}
			if err := o.trust.load("install"); err != nil {
				return err
			}
			return runInstall(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &o, args, command)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.agents, "agent", nil, "install for agent `NAME`: "+strings.Join(install.AgentNames(), ", ")+" (repeatable; default: the agents whose folders exist)")
	fl.BoolVar(&o.project, "project", false, "install into the current project's folders (default: the user's)")
	fl.BoolVar(&o.frozen, "frozen", false, "fail on any difference from skills.lock and never rewrite it (also when CI=true)")
	fl.StringArrayVar(&o.only, "skill", nil, "install only the skill `NAME`: its path (acme/pdf) or its name (repeatable)")
	fl.DurationVar(&o.timeout, "timeout", host.DefaultCallTimeout, "timeout of each call to a server")
	o.trust.register(cmd)
	fl.BoolVar(&o.allowSignerChange, "allow-signer-change", false, "accept skills now signed by someone other than the signer skills.lock records")
	rootCmd.AddCommand(hostCommand(cmd))

	var c installFlags
	check := &cobra.Command{
		Use:   "check [--project]",
		Short: "Check installed skill folders against skills.lock",
		Long: `check compares every folder skills.lock records with the lock: a file
edited, added or removed (by hand, or by a skill that rewrites itself), a
link where a file was, or a folder gone is drift, named with both digests.
Nothing is fetched or written.

Exit status: 0 when every folder matches, 1 on drift, 2 on usage errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(cmd.OutOrStdout(), cmd.ErrOrStderr(), &c)
		},
	}
	check.Flags().BoolVar(&c.project, "project", false, "check the current project's skills.lock (default: the user's)")
	rootCmd.AddCommand(check)

	od := installFlags{outdated: true}
	outdated := &cobra.Command{
		Use:   "outdated [--project]",
		Short: "Show what changed at the sources of skills.lock",
		Long: `outdated fetches every skill of skills.lock again from its recorded source,
verified as install verifies, and lists what differs from the lock, per
skill and per file (changed, added, removed, with both digests; for git, the
commit now served). Nothing is written. To take the changes, install the
source again (skillport install SOURCE).

Exit status: 0 when every skill is current, 1 when one is outdated or could
not be fetched, 2 on usage errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInstall(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &od, nil, nil)
		},
	}
	outdated.Flags().BoolVar(&od.project, "project", false, "the current project's skills.lock (default: the user's)")
	outdated.Flags().DurationVar(&od.timeout, "timeout", host.DefaultCallTimeout, "timeout of each call to a server")
	rootCmd.AddCommand(hostCommand(outdated))

	var r installFlags
	remove := &cobra.Command{
		Use:   "remove [--project] NAME...",
		Short: "Remove installed skills and their skills.lock records",
		Long: `remove takes each named skill out of every folder skills.lock records for
it, each folder in one step, and rewrites the lock. A folder that differs
from the lock (edited by hand) is left alone unless --force is given.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRemove(cmd.OutOrStdout(), cmd.ErrOrStderr(), &r, args)
		},
	}
	remove.Flags().BoolVar(&r.project, "project", false, "remove from the current project (default: the user's skills)")
	remove.Flags().BoolVar(&r.force, "force", false, "remove folders that differ from skills.lock too")
	rootCmd.AddCommand(remove)
}

// installScope returns the folder agent folders are relative to and the
// lock file's path.
func installScope(project bool) (base, lockPath string, err error) {
	if project {
		base, err = os.Getwd()
		if err != nil {
			return "", "", err
		}
		return base, filepath.Join(base, install.LockName), nil
	}
	base, err = os.UserHomeDir()
	if err != nil {
		return "", "", fmt.Errorf("no home directory (%v); use --project", err)
	}
	cfg, err := os.UserConfigDir()
	if err != nil {
		return "", "", fmt.Errorf("no user configuration directory (%v); use --project", err)
	}
	return base, filepath.Join(cfg, "skillport", install.LockName), nil
}

// installSource is one source of an install, with the origin it becomes.
type installSource struct {
	given    string
	resolved install.Resolved
	origin   host.Origin
	want     map[string]bool // restore: the skill paths the lock has from it
	// locked, for an install of a SOURCE under --frozen, are the skill
	// paths the lock has from it: one the source no longer has is gone.
	locked map[string]bool
	// refused counts the skills a site listed but that were refused on
	// the way in (a digest that does not match, an unsafe archive…),
	// each already reported: the source is not complete.
	refused int
}

// sourceOf turns a SOURCE argument into an origin. A plain web address is
// read as a site first: its discovery document names the MCP endpoint or
// the skills themselves (openSite), and the lock records the document's
// digest.
func sourceOf(ctx context.Context, stderr io.Writer, cmd, given string, timeout time.Duration) (installSource, error) {
	s := installSource{given: given}
	switch {
	case gitsource.IsSpec(given):
		spec, err := gitsource.ParseSpec(given)
		if err != nil {
			return s, usageErrorf("install: %v", err)
		}
		s.origin = host.Origin{Git: given}
		s.resolved = install.Resolved{Kind: "git", URL: spec.String()}
	case ociref.IsSpec(given):
		ref, err := ociref.Parse(given)
		if err != nil {
			return s, usageErrorf("install: %v", err)
		}
		s.origin = host.Origin{OCI: given}
		s.resolved = install.Resolved{Kind: "oci", URL: ref.String()}
	case strings.HasPrefix(given, "http://") || strings.HasPrefix(given, "https://"):
		if u, err := url.Parse(given); err != nil || u.Host == "" {
			return s, usageErrorf("install: %q is not a URL; give a server URL, git+URL[@REF][#SUBDIR], a folder, or a command after --", given)
		}
		s.origin = host.Origin{URL: given}
		s.resolved = install.Resolved{Kind: "mcp", URL: given}
		if host.IsSiteURL(given) {
			site, refused, _, err := openSite(ctx, stderr, cmd, &s.origin, timeout)
			if err != nil {
				return s, err
			}
			s.refused = len(refused)
			if site != nil {
				s.resolved = install.Resolved{Kind: "site", URL: given, Document: site.Digest}
			}
		}
	default:
		abs, err := filepath.Abs(given)
		if err != nil {
			return s, usageErrorf("install: %s: %v", esc(given), err)
		}
		fi, err := os.Stat(abs)
		if err != nil || !fi.IsDir() {
			return s, usageErrorf("install: %s is not a folder, a server URL (http:// or https://), git+URL or oci://REGISTRY/REPOSITORY; give one of those, or a command after --", esc(given))
		}
		s.origin = host.Origin{Dir: abs, Display: given}
		s.resolved = install.Resolved{Kind: "directory", Dir: abs}
	}
	return s, nil
}

// commandSource is the server command after --.
func commandSource(argv []string) installSource {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			quoted[i] = strconv.Quote(a)
		}
	}
	return installSource{
		given:    "-- " + strings.Join(quoted, " "),
		resolved: install.Resolved{Kind: "command", Command: argv},
		origin:   host.Origin{Command: argv[0], Args: argv[1:]},
	}
}

// restoreSource rebuilds a lock record's source: a folder and a server
// from what they resolved to, a git source and a site as given, so that a
// ref that moved or a document that changed is seen.
func restoreSource(ctx context.Context, stderr io.Writer, cmd string, s install.Skill, timeout time.Duration) (installSource, error) {
	switch s.Resolved.Kind {
	case "command":
		if len(s.Resolved.Command) == 0 {
			return installSource{}, fmt.Errorf("%s: the lock records no command", s.Name)
		}
		src := commandSource(s.Resolved.Command)
		src.given = s.Source
		return src, nil
	case "directory":
		src, err := sourceOf(ctx, stderr, cmd, s.Resolved.Dir, timeout)
		src.given = s.Source
		return src, err
	case "mcp":
		src, err := sourceOf(ctx, stderr, cmd, s.Resolved.URL, timeout)
		src.given = s.Source
		return src, err
	}
	return sourceOf(ctx, stderr, cmd, s.Source, timeout)
}

// sourceLabel is the host label of the source given: readable, and the
// same on every run, because an approval a user remembered is bound to it
// (approval.Key) and a policy file names it. It is the source's last
// words (letters and digits, at most 20 characters, hyphenated), then 6
// hex digits of its SHA-256, so that two sources never share one.
func sourceLabel(given string) string {
	var b strings.Builder
	short := given
	for _, p := range []string{"git+", "https://", "http://", "file://"} {
		short = strings.TrimPrefix(short, p)
	}
	for _, r := range strings.ToLower(short) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if n := b.Len(); n > 0 && b.String()[n-1] != '-' {
			b.WriteByte('-')
		}
	}
	readable := strings.Trim(b.String(), "-")
	if cut := len(readable) - 20; cut > 0 {
		// Whole words only: drop the one the cut falls inside.
		tail := readable[cut:]
		if readable[cut-1] != '-' {
			if _, rest, ok := strings.Cut(tail, "-"); ok {
				tail = rest
			}
		}
		readable = strings.TrimLeft(tail, "-")
	}
	sum := sha256.Sum256([]byte(given))
	if readable == "" {
		return "src-" + hex.EncodeToString(sum[:3])
	}
	return readable + "-" + hex.EncodeToString(sum[:3])
}

// fetched is one skill fetched and verified, ready to be written.
type fetched struct {
	src   *installSource
	entry *host.Entry
	files []*host.File
	rec   install.Skill
}

func runInstall(ctx context.Context, stdout, stderr io.Writer, o *installFlags, args, command []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	restore := len(args) == 0 && len(command) == 0
	if restore && (len(o.agents) > 0 || len(o.only) > 0) {
		return usageErrorf("install: --agent and --skill apply to a SOURCE; with no SOURCE, skills.lock is restored as it is")
	}
	base, lockPath, err := installScope(o.project)
	if err != nil {
		return usageErrorf("install: %v", err)
	}
	var agents []install.Agent
	for _, name := range o.agents {
		a, err := install.FindAgent(name)
		if err != nil {
			return usageErrorf("install: %v", err)
		}
		if !slices.ContainsFunc(agents, func(b install.Agent) bool { return b.Name == a.Name }) {
			agents = append(agents, a)
		}
	}
	if !restore && len(agents) == 0 {
		agents = install.Detect(base, o.project)
		if len(agents) == 0 {
			scope := "home directory " + base
			if o.project {
				scope = "project " + base
			}
			return usageErrorf("install: no agent's folder found in the %s; name the agents with --agent NAME (%s)", esc(scope), strings.Join(install.AgentNames(), ", "))
		}
	}
	if o.outdated {
		return runOutdated(ctx, stdout, stderr, o, lockPath)
	}
	release, err := install.Acquire(lockPath)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("install: %w", err)}
	}
	defer release()
	lock, exists, err := install.Read(lockPath)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("install: %w", err)}
	}
	if restore && !exists {
		return usageErrorf("install: no SOURCE given and no %s; name a source to install from (a folder, a server URL, git+URL, or -- COMMAND)", esc(lockPath))
	}
	sweepStaging(stderr, "install", stagingParents(o.project, lock))

	var sources []*installSource
	if restore {
		if sources, err = lockSources(ctx, stderr, "install", lock, o.timeout); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("install: %w", err)}
		}
	} else {
		for _, a := range args {
			src, err := sourceOf(ctx, stderr, "install", a, o.timeout)
			if err != nil {
				return err
			}
			sources = append(sources, &src)
		}
		if len(command) > 0 {
			src := commandSource(command)
			sources = append(sources, &src)
		}
	}
	if len(sources) == 0 {
		fmt.Fprintf(stdout, "%s lists no skills; nothing to install\n", esc(lockPath))
		return nil
	}
	if o.frozen && !restore {
		// The lock's skills from a SOURCE given must all still be there.
		for _, src := range sources {
			for _, s := range lock.Skills {
				if s.Source == src.given {
					if src.locked == nil {
						src.locked = map[string]bool{}
					}
					src.locked[s.Path] = true
				}
			}
		}
	}
	failed := 0
	fail := func(who, msg string) {
		failed++
		printError(stderr, "install: "+esc(who)+": ", msg)
	}
	todo, gone, ok, h, err := fetchSources(ctx, stderr, o, sources, !restore, nil, fail)
	if err != nil {
		return err
	}
	defer h.Close()
	for _, g := range gone {
		fail(g.who(), "the source no longer has this skill, which "+install.LockName+" records (skillport update removes it)")
	}

	// Two skills that would write one folder are refused, naming both:
	// among those fetched, and against the lock's other skills.
	byFolder := map[string]*fetched{}
	for _, f := range todo {
		key := host.FoldName(f.rec.Name)
		if prev := byFolder[key]; prev != nil {
			fail(f.rec.Path+" from "+f.src.given, fmt.Sprintf("it and %s from %s would both be written to the folder %s; install one of them (--skill)", prev.rec.Path, prev.src.given, f.rec.Name))
			continue
		}
		byFolder[key] = f
	}
	if !restore {
		for _, s := range lock.Skills {
			if f := byFolder[host.FoldName(s.Name)]; f != nil && (s.Source != f.rec.Source || s.Path != f.rec.Path) {
				fail(f.rec.Path+" from "+f.src.given, fmt.Sprintf("%s from %s is installed in the folder %s; skillport remove %s first", s.Path, s.Source, s.Name, s.Name))
			}
		}
	}

	// Restoring and --frozen compare with the lock before anything is
	// written: any difference refuses the whole install.
	locked := lockIndex(lock)
	if !o.allowSignerChange {
		for _, f := range todo {
			if msg := install.SignerChange(locked[f.rec.Source+"\x00"+f.rec.Path], &f.rec); msg != "" {
				fail(f.rec.Path+" from "+f.src.given, msg)
			}
		}
	}
	if restore || o.frozen {
		compareLock(todo, locked, fail)
	}
	if failed > 0 || !ok {
		if restore || o.frozen {
			fmt.Fprintf(stderr, "skillport: install: nothing written; %s differs from the sources (or a source failed)\n", esc(lockPath))
		}
		return errFailed
	}

	// Where each skill goes: for a restore, where the lock says; else the
	// agents chosen, with the folders it already had.
	for _, f := range todo {
		old := locked[f.rec.Source+"\x00"+f.rec.Path]
		if old != nil {
			f.rec.Installed = slices.Clone(old.Installed)
		}
		if restore {
			continue
		}
		for _, a := range agents {
			t := install.Target{Agent: a.Name, Dir: filepath.Join(a.Folder(base, o.project), f.rec.Name)}
			if slices.Contains(f.rec.Installed, t) {
				continue
			}
			if o.frozen {
				fail(f.rec.Path+" from "+f.src.given, fmt.Sprintf("%s is not among the folders %s records for it (--frozen)", t.Dir, install.LockName))
				continue
			}
			f.rec.Installed = append(f.rec.Installed, t)
		}
	}
	if failed > 0 {
		return errFailed
	}
	written, current := 0, 0
	for _, f := range todo {
		done := map[string]bool{}
		for _, t := range f.rec.Installed {
			if done[t.Dir] {
				continue
			}
			done[t.Dir] = true
			same, err := placeSkill(t.Dir, f)
			switch {
			case err != nil:
				fail(f.rec.Path+" from "+f.src.given, err.Error())
			case same:
				current++
				fmt.Fprintf(stdout, "%s: %s is up to date\n", esc(f.rec.Name), esc(t.Dir))
			default:
				written++
				fmt.Fprintf(stdout, "%s -> %s (%s verified)\n", esc(f.rec.Name), esc(t.Dir), count(len(f.rec.Files), "file", "files"))
			}
		}
	}
	if !restore && !o.frozen && failed == 0 && len(todo) > 0 {
		var keep []install.Skill
		for _, s := range lock.Skills {
			replaced := slices.ContainsFunc(todo, func(f *fetched) bool { return f.rec.Source == s.Source && f.rec.Path == s.Path })
			if !replaced {
				keep = append(keep, s)
			}
		}
		for _, f := range todo {
			keep = append(keep, f.rec)
		}
		lock.Skills = keep
		if err := install.Write(lockPath, lock); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("install: writing %s: %w", esc(lockPath), err)}
		}
	}
	fmt.Fprintf(stdout, "%s written, %d up to date, %d failed\n", count(written, "folder", "folders"), current, failed)
	if failed > 0 {
		return errFailed
	}
	if len(todo) == 0 {
		fmt.Fprintln(stderr, "skillport: install: the sources have no skill to install")
		return errFailed
	}
	return nil
}

// sweepStaging cleans the skills folders given, before anything reads
// them, of what an interrupted install, update, remove or pull left there
// (install.Sweep: only its own marked staging folders, none in use),
// putting back a folder left aside.
func sweepStaging(stderr io.Writer, cmd string, parents []string) {
	for _, p := range parents {
		swept, err := install.Sweep(p)
		for _, b := range swept.Restored {
			fmt.Fprintf(stderr, "skillport: %s: put back %s, left aside by an interrupted install or pull\n", cmd, esc(b))
		}
		if err != nil {
			fmt.Fprintf(stderr, "skillport: %s: %s\n", cmd, esc(err.Error()))
		}
	}
}

// stagingParents are the skills folders a scope writes into, sorted:
// every known agent's folder in the scope, and the parent of every folder
// lock records.
func stagingParents(project bool, lock *install.Lock) []string {
	var parents []string
	if base, _, err := installScope(project); err == nil {
		for _, a := range install.Agents {
			parents = append(parents, a.Folder(base, project))
		}
	}
	for _, s := range lock.Skills {
		for _, t := range s.Installed {
			parents = append(parents, filepath.Dir(t.Dir))
		}
	}
	slices.Sort(parents)
	return slices.Compact(parents)
}

// placeSkill writes f into the skill folder dir: staged beside it through
// host.Materialize (which checks every name and sets modes by the rule
// pull follows) and placed in one step. It reports a folder that already
// held exactly these files, which is left alone.
func placeSkill(dir string, f *fetched) (same bool, err error) {
	if _, err := os.Lstat(dir); err == nil {
		if diffs, err := drift(&f.rec, dir); err == nil && len(diffs) == 0 {
			return true, nil
		}
	}
	_, err = host.Materialize(filepath.Dir(dir), f.entry, f.files, &host.MaterializeOptions{Replace: true})
	if errors.Is(err, host.ErrUpToDate) {
		return true, nil
	}
	return false, err
}

// drift lists how the installed folder dir differs from s.
func drift(s *install.Skill, dir string) ([]string, error) {
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		return []string{"the folder was replaced by a link or file"}, nil
	}
	have, odd, err := install.ReadTree(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []string{"the folder is gone"}, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range odd {
		out = append(out, p+" is not a regular file (a link or device), which install never writes")
	}
	for _, d := range install.Compare(s.Files, have) {
		out = append(out, d.String())
	}
	return out, nil
}

func runCheck(stdout, stderr io.Writer, o *installFlags) error {
	_, lockPath, err := installScope(o.project)
	if err != nil {
		return usageErrorf("check: %v", err)
	}
	lock, exists, err := install.Read(lockPath)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("check: %w", err)}
	}
	if !exists {
		return usageErrorf("check: no %s; install skills first (skillport install SOURCE)", esc(lockPath))
	}
	type folder struct {
		s   *install.Skill
		dir string
	}
	var todo []folder
	for i := range lock.Skills {
		s := &lock.Skills[i]
		seen := map[string]bool{}
		for _, t := range s.Installed {
			if !seen[t.Dir] {
				seen[t.Dir] = true
				todo = append(todo, folder{s, t.Dir})
			}
		}
	}
	// Folders are read side by side, one per CPU: hashing is most of the
	// time, and each folder is independent. Drift is printed in lock order.
	diffs := make([][]string, len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(todo); i = int(next.Add(1) - 1) {
				d, err := drift(todo[i].s, todo[i].dir)
				if err != nil {
					d = []string{err.Error()}
				}
				diffs[i] = d
			}
		})
	}
	wg.Wait()
	// Staging folders an interrupted install or pull left are not drift
	// (agents skip dot folders), but they hold disk: named, for the next
	// install to remove.
	for _, p := range stagingParents(o.project, lock) {
		left, _ := install.Abandoned(p)
		for _, st := range left {
			fmt.Fprintf(stderr, "skillport: check: %s: a staging folder left by an interrupted install or pull; the next skillport install removes it\n", esc(st))
		}
	}
	drifted, folders := 0, len(todo)
	for i, f := range todo {
		for _, d := range diffs[i] {
			fmt.Fprintf(stderr, "skillport: check: %s (%s): drift: %s\n", esc(f.s.Name), esc(f.dir), esc(d))
		}
		if len(diffs[i]) > 0 {
			drifted++
		}
	}
	if drifted > 0 {
		fmt.Fprintf(stdout, "%s of %d drifted from %s; skillport install restores them\n", count(drifted, "folder", "folders"), folders, lockPath)
		return errFailed
	}
	fmt.Fprintf(stdout, "%s in %s match %s\n", count(len(lock.Skills), "skill", "skills"), count(folders, "folder", "folders"), lockPath)
	return nil
}

// lockedScope takes the install lock of the scope's skills.lock and reads
// it, for a command that rewrites it; a missing lock is a usage error,
// whose fix is missing. Call release when done.
func lockedScope(cmd string, project bool, missing string) (lockPath string, lock *install.Lock, release func() error, err error) {
	_, lockPath, err = installScope(project)
	if err != nil {
		return "", nil, nil, usageErrorf("%s: %v", cmd, err)
	}
	release, err = install.Acquire(lockPath)
	if err != nil {
		return "", nil, nil, &exitError{code: 1, err: fmt.Errorf("%s: %w", cmd, err)}
	}
	lock, exists, err := install.Read(lockPath)
	if err == nil && !exists {
		err = usageErrorf("%s: no %s; %s", cmd, esc(lockPath), missing)
	} else if err != nil {
		err = &exitError{code: 1, err: fmt.Errorf("%s: %w", cmd, err)}
	}
	if err != nil {
		release()
		return "", nil, nil, err
	}
	return lockPath, lock, release, nil
}

func runRemove(stdout, stderr io.Writer, o *installFlags, names []string) error {
	lockPath, lock, release, err := lockedScope("remove", o.project, "nothing is installed in this scope")
	if err != nil {
		return err
	}
	defer release()
	sweepStaging(stderr, "remove", stagingParents(o.project, lock))
	failed := 0
	var keep []install.Skill
	for _, name := range names {
		if !slices.ContainsFunc(lock.Skills, func(s install.Skill) bool { return s.Name == name }) {
			failed++
			fmt.Fprintf(stderr, "skillport: remove: %s: not in %s\n", esc(name), esc(lockPath))
		}
	}
	for i := range lock.Skills {
		s := &lock.Skills[i]
		if !slices.Contains(names, s.Name) {
			keep = append(keep, *s)
			continue
		}
		left, n := removeTargets(stdout, stderr, "remove", s, o.force)
		failed += n
		if len(left) > 0 {
			s.Installed = left
			keep = append(keep, *s)
		}
	}
	lock.Skills = keep
	if err := install.Write(lockPath, lock); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("remove: writing %s: %w", esc(lockPath), err)}
	}
	if failed > 0 {
		return errFailed
	}
	return nil
}

// lockSources rebuilds the sources of the lock's skills, each once, with
// the skill paths the lock has from it.
func lockSources(ctx context.Context, stderr io.Writer, cmd string, lock *install.Lock, timeout time.Duration) ([]*installSource, error) {
	var sources []*installSource
	bySource := map[string]*installSource{}
	for _, s := range lock.Skills {
		src := bySource[s.Source]
		if src == nil {
			made, err := restoreSource(ctx, stderr, cmd, s, timeout)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", esc(s.Source), err)
			}
			src = &made
			src.want = map[string]bool{}
			bySource[s.Source] = src
			sources = append(sources, src)
		}
		src.want[s.Path] = true
	}
	return sources, nil
}

// goneSkill is a skill the lock records that its source, which answered,
// no longer has.
type goneSkill struct {
	src  *installSource
	path string
}

func (g goneSkill) who() string { return g.path + " from " + g.src.given }

// fetchSources connects to the sources through one host (built with opts,
// nil for none) and fetches and verifies their skills (those of --skill,
// or those the lock has from a source), as pull does, and checks their
// names against the portable-name rules before anything is written. A
// skill that fails is reported to fail. gone lists the skills the lock
// has from a source that answered without them. ok is false when a
// source failed as a whole. upstream asks a git remote whether a tag
// already mirrored moved (install SOURCE, outdated, update); a restore
// reads the mirror's tag as a pin, as serve does. Close h when done.
func fetchSources(ctx context.Context, stderr io.Writer, o *installFlags, sources []*installSource, upstream bool, opts *host.Options, fail func(who, msg string)) (todo []*fetched, gone []goneSkill, ok bool, h *host.Host, err error) {
	origins := make([]host.Origin, len(sources))
	used := map[string]bool{}
	for i, s := range sources {
		label := sourceLabel(s.given)
		if used[label] {
			label = fmt.Sprintf("src-%d", i+1)
		}
		used[label] = true
		s.origin.Label = label
		origins[i] = s.origin
	}
	hf := &hostFlags{timeout: o.timeout, trust: o.trust, recheckTags: upstream}
	h, err = hf.newHost(ctx, origins, opts)
	if err != nil {
		return nil, nil, false, nil, err
	}
	ok = reportOrigins(stderr, h, hf)
	untrusted(h, func(origin, uri, msg string) {
		path := skillPathOf(uri)
		for _, src := range sources {
			if src.origin.Label == origin && asked(o.only, path) && (src.want == nil || src.want[path]) {
				fail(src.given, msg)
			}
		}
	})
	status := map[string]host.OriginStatus{}
	for _, st := range h.Origins() {
		status[st.Label] = st
	}
	// A skill the host refused (an invalid entry, one over a limit, an
	// untrusted signature) is not installed and fails the source; nor is it
	// gone from the source, which still lists it.
	refusedAt := map[string]map[string]bool{}
	for _, d := range h.Diagnostics() {
		if !d.Refused || d.URI == "" {
			continue
		}
		path := skillPathOf(d.URI)
		if refusedAt[d.Origin] == nil {
			refusedAt[d.Origin] = map[string]bool{}
		}
		refusedAt[d.Origin][path] = true
		if errors.Is(d.Err, host.ErrUntrusted) {
			continue // failed above, with the policy's reason
		}
		for _, src := range sources {
			if src.origin.Label == d.Origin && asked(o.only, path) && (src.want == nil || src.want[path]) {
				fail(path+" from "+src.given, "refused by the host (said above); not installed")
			}
		}
	}

	for _, src := range sources {
		st := status[src.origin.Label]
		src.resolved.Server, src.resolved.ServerVersion = st.ReportedName, st.ReportedVersion
		var entries []*host.Entry
		for _, e := range h.Skills() {
			if e.Origin == src.origin.Label {
				entries = append(entries, e)
			}
		}
		if len(o.only) > 0 {
			picked, problems := pickSkills(entries, o.only)
			entries = picked
			for _, p := range problems {
				fail(src.given, p.msg)
			}
		}
		roots := map[string]*host.Entry{}
		for _, e := range entries {
			roots[e.Origin+" "+e.Root] = e
		}
		found := map[string]bool{}
		for _, e := range entries {
			if src.want != nil && !src.want[e.Path] {
				continue
			}
			if containing(roots, e) != nil {
				continue // written with the skill that contains it, as pull does
			}
			found[e.Path] = true
			who := e.Path + " from " + src.given
			if err := skill.ValidName(e.Name); err != nil {
				fail(who, fmt.Sprintf("its folder name: %v", err))
				continue
			}
			files, err := h.FetchAll(ctx, e)
			if err != nil {
				fail(who, err.Error())
				continue
			}
			rec := install.Skill{Name: e.Name, Path: e.Path, Source: src.given, Resolved: src.resolved, Signer: e.Signer}
			for _, f := range files {
				rec.Files = append(rec.Files, install.FileOf(f.Path, f.Data))
			}
			rec.Digest = install.TreeDigest(rec.Files)
			if err := portable(&rec); err != nil {
				fail(who, err.Error())
				continue
			}
			todo = append(todo, &fetched{src: src, entry: e, files: files, rec: rec})
		}
		if src.refused > 0 {
			// A refused skill is not gone from the source: nothing is
			// removed for it, and the install fails.
			fail(src.given, fmt.Sprintf("%s refused on the way in (said above): the source is incomplete, so none of its skills counts as removed", count(src.refused, "skill was", "skills were")))
			continue
		}
		if st.Err != nil {
			continue // its skills are not gone, only out of reach
		}
		for p := range src.want {
			if !found[p] && !refusedAt[src.origin.Label][p] {
				gone = append(gone, goneSkill{src: src, path: p})
			}
		}
		for p := range src.locked {
			if !found[p] && !refusedAt[src.origin.Label][p] && asked(o.only, p) {
				gone = append(gone, goneSkill{src: src, path: p})
			}
		}
	}
	slices.SortFunc(gone, func(a, b goneSkill) int { return strings.Compare(a.who(), b.who()) })
	return todo, gone, ok, h, nil
}

// asked reports whether --skill (only; none means all) picks the skill at
// path, by its path or its folder name.
func asked(only []string, path string) bool {
	return len(only) == 0 || slices.ContainsFunc(only, func(n string) bool { return n == path || n == path[strings.LastIndex(path, "/")+1:] })
}

// portable checks the skill's folder name and every file's path against
// the rules host.Materialize applies (host.CheckNames): a name Windows
// reserves (CON, NUL, COM1…), a trailing dot or space, a reserved
// character such as : or \, or two paths one file on a case-insensitive
// filesystem would make the skill a different set of files, or none, on
// another system, so the install is refused before anything is written.
func portable(rec *install.Skill) error {
	paths := make([]string, len(rec.Files))
	for i, f := range rec.Files {
		paths[i] = f.Path
	}
	if err := host.CheckNames(rec.Name, paths); err != nil {
		return fmt.Errorf("not installed: %w", err)
	}
	return nil
}

// compareLock reports to differ how each fetched skill differs from its
// record in locked (by source and path): not recorded, a git source now
// serving another commit, files changed, added or removed.
func compareLock(todo []*fetched, locked map[string]*install.Skill, differ func(who, msg string)) {
	for _, f := range todo {
		who := f.rec.Path + " from " + f.src.given
		old := locked[f.rec.Source+"\x00"+f.rec.Path]
		if old == nil {
			differ(who, "not in "+install.LockName+" (--frozen installs only what the lock has)")
			continue
		}
		if f.rec.Resolved.Kind == "git" && old.Resolved.ServerVersion != "" && f.rec.Resolved.ServerVersion != old.Resolved.ServerVersion {
			differ(who, fmt.Sprintf("the git source now serves commit %s for %s (it moved upstream); %s has %s", f.rec.Resolved.ServerVersion, gitRef(f.rec.Source), install.LockName, old.Resolved.ServerVersion))
		}
		if f.rec.Resolved.Kind == "site" && f.rec.Resolved.Document != old.Resolved.Document {
			differ(who, fmt.Sprintf("the site's discovery document is now %s; %s has %s", f.rec.Resolved.Document, install.LockName, old.Resolved.Document))
		}
		if f.rec.Resolved.Kind == "oci" && old.Resolved.ServerVersion != "" && f.rec.Resolved.ServerVersion != old.Resolved.ServerVersion {
			differ(who, fmt.Sprintf("the OCI source now names %s; %s has %s", f.rec.Resolved.ServerVersion, install.LockName, old.Resolved.ServerVersion))
		}
		for _, d := range install.Compare(old.Files, f.rec.Files) {
			differ(who, d.String())
		}
	}
}

// gitRef names the ref of the git source given, for a message.
func gitRef(given string) string {
	spec, err := gitsource.ParseSpec(given)
	if err != nil || spec.Ref == "" {
		return "the remote's default branch"
	}
	return "ref " + spec.Ref
}

// skillChanges are the ways one fetched skill differs from its record.
type skillChanges struct {
	f    *fetched
	msgs []string
}

// lockChanges lists, in order, the fetched skills that differ from their
// records in locked, with how (compareLock).
func lockChanges(todo []*fetched, locked map[string]*install.Skill) []*skillChanges {
	var out []*skillChanges
	by := map[*fetched]*skillChanges{}
	for _, f := range todo {
		compareLock([]*fetched{f}, locked, func(_, msg string) {
			if by[f] == nil {
				by[f] = &skillChanges{f: f}
				out = append(out, by[f])
			}
			by[f].msgs = append(by[f].msgs, msg)
		})
	}
	return out
}

// printChanges prints a skill's changes, one line each under its name.
func printChanges(w io.Writer, c *skillChanges) {
	fmt.Fprintf(w, "%s from %s: %s\n", esc(c.f.rec.Path), esc(c.f.src.given), count(len(c.msgs), "change", "changes"))
	for _, m := range c.msgs {
		fmt.Fprintf(w, "  %s\n", esc(m))
	}
}

// lockIndex maps each skill of lock by source and path.
func lockIndex(lock *install.Lock) map[string]*install.Skill {
	locked := map[string]*install.Skill{}
	for i := range lock.Skills {
		s := &lock.Skills[i]
		locked[s.Source+"\x00"+s.Path] = s
	}
	return locked
}

// runOutdated reports how the lock's sources differ from it, per skill.
func runOutdated(ctx context.Context, stdout, stderr io.Writer, o *installFlags, lockPath string) error {
	lock, exists, err := install.Read(lockPath)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("outdated: %w", err)}
	}
	if !exists {
		return usageErrorf("outdated: no %s; install skills first (skillport install SOURCE)", esc(lockPath))
	}
	sources, err := lockSources(ctx, stderr, "outdated", lock, o.timeout)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("outdated: %w", err)}
	}
	if len(sources) == 0 {
		fmt.Fprintf(stdout, "%s lists no skills\n", esc(lockPath))
		return nil
	}
	failed := 0
	todo, gone, ok, h, err := fetchSources(ctx, stderr, o, sources, true, nil, func(who, msg string) {
		failed++
		printError(stderr, "outdated: "+esc(who)+": ", msg)
	})
	if err != nil {
		return err
	}
	defer h.Close()
	changes := lockChanges(todo, lockIndex(lock))
	for _, c := range changes {
		printChanges(stdout, c)
	}
	for _, g := range gone {
		fmt.Fprintf(stdout, "%s: removed at the source (skillport update removes it)\n", esc(g.who()))
	}
	fmt.Fprintf(stdout, "%d of %s outdated, %d failed\n", len(changes)+len(gone), count(len(todo)+len(gone), "skill", "skills"), failed)
	if len(changes) > 0 || len(gone) > 0 || failed > 0 || !ok {
		return errFailed
	}
	return nil
}
