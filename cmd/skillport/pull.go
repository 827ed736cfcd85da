package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/sanitize"
	"github.com/skillport/skillport/internal/suggest"
)

func init() {
	var f hostFlags
	var to string
	var replace, asJSON bool
	cmd := &cobra.Command{
		Use:   "pull [flags] --to DIR " + serverArgs,
		Short: "Copy a server's skills into a folder, after verifying every file",
		Long: `pull materializes a server's skills for agents that only read skill folders:
every file of a skill is fetched and verified (size, SHA-256, SKILL.md
frontmatter) before anything is written, SKILL.md first, and a skill whose
SKILL.md fails is not read further. Each skill is written to DIR/NAME all at
once, as regular files (mode 0755 for a file starting with #!, else 0644),
staged beside it in a .skillport-pull-* folder; one that a killed pull left
is removed by the next pull into DIR.

  skillport pull http://127.0.0.1:8080/mcp --to .claude/skills

Pulled skills become local skills: review them before use, since the agent will
honour their frontmatter (allowed-tools included).

A folder that already holds exactly the server's files is "up to date" and
left alone; one that differs is left alone unless --replace is given. A
nested skill is written inside the skill that contains it, once. Names that
are not portable (Windows device names such as CON or nul.txt, names ending
in a dot or a space, .git) are refused, naming the file and the rule. DIR is
checked before anything is downloaded. On a terminal, stderr shows which
skill a long pull is at.

Exit status: 0 when every skill was pulled or up to date, 1 when one was not
(or when none could be), 2 on usage errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usageErrorf("pull: --to DIR is required")
			}
			if f.config != "" && (len(args) > 0 || cmd.ArgsLenAtDash() >= 0) {
				return usageErrorf("pull: give one server (a URL, or a command after --) or --config FILE, not both")
			}
			if err := f.trust.load("pull"); err != nil {
				return err
			}
			origins, err := f.origins(cmd, args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return runPull(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, origins, to, replace, asJSON)
		},
	}
	f.register(cmd, false)
	f.trust.register(cmd)
	cmd.Flags().StringVar(&to, "to", "", "folder to write skills into (each skill in DIR/NAME)")
	cmd.Flags().BoolVar(&replace, "replace", false, "replace skill folders that exist with other content")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object listing each skill's outcome")
	cmd.Flags().StringArrayVar(&f.only, "skill", nil, "pull only the skill `NAME`: its path (acme/pdf), the name ls shows, or ORIGIN:NAME (repeatable)")
	rootCmd.AddCommand(hostCommand(cmd))
}

// pullResult is one skill's outcome, for --json.
type pullResult struct {
	Skill  string `json:"skill"`
	Status string `json:"status"` // pulled, up-to-date, skipped, failed
	Dir    string `json:"dir,omitempty"`
	Files  int    `json:"files,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Error  string `json:"error,omitempty"`
}

// checkTarget refuses a --to that cannot receive skills before anything is
// downloaded: a file, or a folder that cannot be written.
func checkTarget(to string) error {
	fi, err := os.Stat(to)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(to, 0o755); err != nil {
			return usageErrorf("pull: --to %s: cannot create it: %v", esc(to), errors.Unwrap(err))
		}
	case err != nil:
		return usageErrorf("pull: --to %s: %v", esc(to), errors.Unwrap(err))
	case !fi.IsDir():
		return usageErrorf("pull: --to %s is not a directory", esc(to))
	}
	probe, err := os.CreateTemp(to, ".skillport-probe-")
	if err != nil {
		return usageErrorf("pull: --to %s is not writable: %v", esc(to), errors.Unwrap(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

func runPull(ctx context.Context, stdout, stderr io.Writer, f *hostFlags, origins []host.Origin, to string, replace, asJSON bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := checkTarget(to); err != nil {
		return err
	}
	// What an interrupted pull or install left in --to goes first.
	sweepStaging(stderr, "pull", []string{to})
	h, err := f.newHost(ctx, origins, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	ok := reportOrigins(stderr, h, f)
	var results []pullResult
	failed := 0
	note := func(r pullResult) {
		results = append(results, r)
		if r.Status == "failed" {
			failed++
		}
		if asJSON {
			return
		}
		switch r.Status {
		case "pulled":
			fmt.Fprintf(stdout, "%s -> %s (%s, %s verified)\n", esc(r.Skill), esc(r.Dir), count(r.Files, "file", "files"), humanSize(r.Size))
		case "up-to-date":
			fmt.Fprintf(stdout, "%s: %s is up to date\n", esc(r.Skill), esc(r.Dir))
		case "skipped":
			fmt.Fprintf(stdout, "%s: %s\n", esc(r.Skill), esc(r.Error))
		default:
			printError(stderr, esc(r.Skill)+": not pulled: ", r.Error)
		}
	}
	// Skills the trust policy refused were left out by the host; they are
	// failures of the pull, not silently missing.
	untrusted(h, func(origin, _, msg string) {
		failed++
		results = append(results, pullResult{Skill: origin, Status: "failed", Error: msg})
	})
	var todo []*host.Entry
	for _, e := range f.skills(h) {
		if e.Kind == host.KindMCP {
			todo = append(todo, e)
		}
	}
	if len(f.only) > 0 {
		picked, problems := pickSkills(todo, f.only)
		todo = picked
		for _, p := range problems {
			note(pullResult{Skill: p.arg, Status: "failed", Error: p.msg})
		}
	}
	// A nested skill's files are part of the skill that contains it: it is
	// written with that skill, not a second time beside it.
	roots := map[string]*host.Entry{}
	for _, e := range todo {
		roots[e.Origin+" "+e.Root] = e
	}
	progress := newProgress(stderr, len(todo))
	// Folder names are compared as Materialize compares file names, so that
	// two skills never share a folder on a case-insensitive filesystem.
	type pulledTo struct{ skill, dir string }
	names := map[string]pulledTo{}
	for i, e := range todo {
		if parent := containing(roots, e); parent != nil {
			note(pullResult{Skill: e.CLIName(), Status: "skipped", Error: fmt.Sprintf("inside %s, written with it", parent.CLIName())})
			continue
		}
		if prev, dup := names[host.FoldName(e.Name)]; dup {
			note(pullResult{Skill: e.CLIName(), Status: "failed", Error: fmt.Sprintf("%s already goes to %s (folder names are compared ignoring case); pull it separately into another folder", prev.skill, prev.dir)})
			continue
		}
		progress.step(i, e.CLIName())
		files, err := h.FetchAll(ctx, e)
		if err != nil {
			note(pullResult{Skill: e.CLIName(), Status: "failed", Error: err.Error()})
			continue
		}
		var size int64
		for _, fl := range files {
			size += int64(len(fl.Data))
		}
		dir, err := host.Materialize(to, e, files, &host.MaterializeOptions{Replace: replace})
		switch {
		case errors.Is(err, host.ErrUpToDate):
			note(pullResult{Skill: e.CLIName(), Status: "up-to-date", Dir: dir, Files: len(files), Size: size})
		case errors.Is(err, host.ErrExists):
			note(pullResult{Skill: e.CLIName(), Status: "failed", Error: fmt.Sprintf("%s exists and differs from the server's version; pass --replace to overwrite it", filepath.Join(to, e.Name))})
		case err != nil:
			// Materialize names the skill; say only why.
			msg := err.Error()
			if _, cause, ok := strings.Cut(msg, " from "+e.Origin+": "); ok {
				msg = cause
			}
			note(pullResult{Skill: e.CLIName(), Status: "failed", Error: msg})
		default:
			names[host.FoldName(e.Name)] = pulledTo{e.CLIName(), dir}
			note(pullResult{Skill: e.CLIName(), Status: "pulled", Dir: dir, Files: len(files), Size: size})
		}
	}
	progress.done()
	pulled, current := 0, 0
	for _, r := range results {
		switch r.Status {
		case "pulled":
			pulled++
		case "up-to-date":
			current++
		}
	}
	if asJSON {
		if results == nil {
			results = []pullResult{}
		}
		if err := writeJSON(stdout, map[string]any{"skills": results}); err != nil {
			return err
		}
	} else {
		msg := count(pulled, "skill", "skills") + " pulled"
		if current > 0 {
			msg += fmt.Sprintf(", %d up to date", current)
		}
		fmt.Fprintf(stdout, "%s, %d failed\n", msg, failed)
	}
	// Nothing usable at all is a failure even when nothing "failed": the
	// server's entries were all left out, or the server served no skills.
	if failed > 0 || !ok || pulled+current == 0 {
		if pulled+current == 0 && failed == 0 && ok {
			fmt.Fprintln(stderr, "skillport: pull: no skill could be pulled")
		}
		return errFailed
	}
	return nil
}

// containing returns the listed skill whose folder holds e's, or nil.
func containing(roots map[string]*host.Entry, e *host.Entry) *host.Entry {
	root := strings.TrimSuffix(e.Root, "/")
	for {
		i := strings.LastIndex(root, "/")
		if i < 0 || strings.HasSuffix(root[:i], ":/") || strings.HasSuffix(root[:i], ":") {
			return nil
		}
		root = root[:i]
		if p := roots[e.Origin+" "+root+"/"]; p != nil {
			return p
		}
		if p := roots[e.Origin+" "+root]; p != nil {
			return p
		}
	}
}

// progress shows which skill a long pull is at, on stderr, when stderr is
// a terminal; elsewhere it prints nothing.
type progress struct {
	w     io.Writer
	total int
	on    bool
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: total, on: terminalWidth(w) > 0 && total > 1}
}

func (p *progress) step(i int, name string) {
	if p.on {
		fmt.Fprintf(p.w, "\r\x1b[Kpulling %d/%d: %s", i+1, p.total, sanitize.Truncate(esc(name), 50))
	}
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// skillArgProblem is a pull --skill argument that names no single skill.
type skillArgProblem struct{ arg, msg string }

// pickSkills resolves pull --skill arguments against the listed skills,
// in their order: a skill path, the name ls shows (ORIGIN:NAME or NAME),
// or a skill's own name when one skill alone has it. An argument that
// names none is answered with the closest name; one that names several
// lists their paths.
func pickSkills(entries []*host.Entry, args []string) ([]*host.Entry, []skillArgProblem) {
	want := map[*host.Entry]bool{}
	var problems []skillArgProblem
	for _, a := range args {
		var hits []*host.Entry
		for _, e := range entries {
			if e.Path == a || e.CLIName() == a || strings.TrimPrefix(e.CLIName(), e.Origin+":") == a {
				hits = append(hits, e)
			}
		}
		if len(hits) == 0 {
			for _, e := range entries {
				if e.Name == a {
					hits = append(hits, e)
				}
			}
		}
		switch len(hits) {
		case 0:
			var names []string
			for _, e := range entries {
				names = append(names, e.Path, e.Name)
			}
			msg := "--skill " + a + ": no such skill"
			if c := suggest.Closest(a, names); c != "" {
				msg += "; did you mean " + c + "?"
			} else {
				msg += "; skillport ls lists the skills (NAME, or the path in the PATH column)"
			}
			problems = append(problems, skillArgProblem{a, msg})
		case 1:
			want[hits[0]] = true
		default:
			var paths []string
			for _, e := range hits {
				paths = append(paths, e.CLIName())
			}
			problems = append(problems, skillArgProblem{a, fmt.Sprintf("--skill %s: %d skills have that name; give one of %s", a, len(hits), strings.Join(paths, ", "))})
		}
	}
	var out []*host.Entry
	for _, e := range entries {
		if want[e] {
			out = append(out, e)
		}
	}
	return out, problems
}
