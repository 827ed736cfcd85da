package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/sanitize"
	"github.com/skillport/skillport/skill"
)

func init() {
	var asJSON, dotFiles, strict, allowHardlinks, errorsOnly bool
	cmd := &cobra.Command{
		Use:   "validate PATH...",
		Short: "Check skill folders against the Agent Skills specification",
		Long: `validate checks every skill (a directory holding SKILL.md) under each PATH,
the way skillport serve would publish them, and prints one line per finding:

  path/SKILL.md:line:column: message (rule)

The summary counts every SKILL.md found: valid (published, perhaps with
warnings) + invalid (refused, each with an error) + skipped (a skill.md to
rename) add up to it. Without --strict, rules that real collections break
while hosts load their skills (metadata values that are not strings,
allowed-tools as a list, a name differing from its folder) are warnings and
say how the skill is published.

Exit status: 0 when every skill is valid, 1 when any is invalid or a PATH
holds no SKILL.md at all, 2 on usage errors. --errors-only leaves warnings out.
With --json, one JSON object per finding: path, line, column, rule, message, severity.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("validate: name at least one skill folder, e.g. skillport validate ./skills")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Getenv("GOMEMLIMIT") == "" {
				// A check keeps a few hundred bytes per directory until it
				// reports, and throws away every SKILL.md it parses: without
				// a limit the heap doubles between collections (GOGC=100).
				// The limit is soft: a larger tree gets more, at the cost of
				// more collections.
				debug.SetMemoryLimit(validateMemoryLimit)
				if os.Getenv("GOGC") == "" {
					// Under the limit, collecting sooner only costs time:
					// the live heap grows with the tree, so GOGC=100
					// collects every time it has doubled, 34 times on the
					// 63,000-skill tree where the limit alone collects 9.
					debug.SetGCPercent(-1)
				}
			}
			return runValidateOpts(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, asJSON, errorsOnly, &catalog.Options{IncludeDotFiles: dotFiles, Strict: strict, AllowHardlinks: allowHardlinks})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print findings as JSON, one object per line")
	cmd.Flags().BoolVar(&errorsOnly, "errors-only", false, "print errors only, not warnings (the summary still counts every skill)")
	cmd.Flags().BoolVar(&dotFiles, "include-dotfiles", false, "treat files whose names start with \".\" as part of skills")
	cmd.Flags().BoolVar(&strict, "strict", false, "make errors of the rules hosts tolerate (non-string metadata, allowed-tools as a list, name differing from its folder)")
	cmd.Flags().BoolVar(&allowHardlinks, "allow-hardlinks", false, "accept files with more than one hard link (reported as errors by default, rule hardlink)")
	rootCmd.AddCommand(cmd)
}

// validateMemoryLimit is validate's soft memory limit (GOMEMLIMIT overrides
// it), and with GOGC unset the only trigger of a collection: a 63,000-skill
// tree (246,000 directories) ends with about 140 MB live, and the process
// peaks near 275 MB resident, under the 300 MB budget.
const validateMemoryLimit = 256 << 20

func runValidate(stdout, stderr io.Writer, args []string, asJSON bool, copts *catalog.Options) error {
	return runValidateOpts(stdout, stderr, args, asJSON, false, copts)
}

// runValidateOpts is runValidate; errorsOnly leaves warnings out of the
// report (the summary still counts every skill).
func runValidateOpts(stdout, stderr io.Writer, args []string, asJSON, errorsOnly bool, copts *catalog.Options) error {
	// Check every argument before reporting on any, so a typo is a usage error.
	dirs := make([]string, len(args))
	for i, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil {
			return usageErrorf("validate: %s: %v", esc(arg), errors.Unwrap(err))
		}
		switch {
		case fi.IsDir():
			dirs[i] = arg
		case filepath.Base(arg) == skill.FileName:
			dirs[i] = filepath.Dir(arg)
		default:
			return usageErrorf("validate: %s is a file; name a skill folder or a SKILL.md", esc(arg))
		}
	}
	// One write per 64 KiB rather than per finding: a large collection has
	// tens of thousands. Whatever stdout holds is written before a line to
	// stderr, so that the two read in order where they meet.
	out := bufio.NewWriterSize(stdout, 64<<10)
	warnf := func(format string, a ...any) {
		out.Flush()
		fmt.Fprintf(stderr, format, a...)
	}
	enc := json.NewEncoder(out)
	valid, invalid, skipped, empty := 0, 0, 0, 0
	quiet := slog.New(slog.DiscardHandler)
	for _, dir := range dirs {
		o := *copts
		o.Logger = quiet
		// A large tree takes seconds: on a terminal, say what is being
		// checked rather than stay silent (cleared before any finding).
		onTTY := terminalWidth(stderr) > 0
		if onTTY {
			out.Flush()
			fmt.Fprintf(stderr, "\r\x1b[Kchecking %s…", sanitize.Truncate(esc(dir), 60))
		}
		rep, err := catalog.CheckDir(dir, &o)
		if onTTY {
			fmt.Fprint(stderr, "\r\x1b[K")
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			warnf("%s: cannot read: %s\n", esc(dir), esc(err.Error()))
			invalid++
			continue
		}
		st := rep.Stats
		if st.Skills == 0 && st.Invalid == 0 && st.Skipped == 0 {
			// Nothing was checked: a typo'd or wrong folder must not pass.
			warnf("skillport: validate: no SKILL.md found under %s (a skill is a folder holding SKILL.md)\n", esc(dir))
			empty++
		}
		valid += st.Skills
		invalid += st.Invalid
		skipped += st.Skipped
		for _, d := range rep.Diagnostics {
			if errorsOnly && d.Severity == skill.Warning {
				continue
			}
			p := filepath.Join(dir, filepath.FromSlash(d.Path))
			if asJSON {
				d.Path = p
				if err := enc.Encode(d); err != nil {
					return err
				}
				continue
			}
			loc := p
			if d.Line > 0 {
				loc = fmt.Sprintf("%s:%d:%d", p, d.Line, d.Column)
			}
			sev := ""
			if d.Severity == skill.Warning {
				sev = "warning: "
			}
			fmt.Fprintf(out, "%s: %s%s (%s)\n", esc(loc), sev, esc(d.Message), d.Rule)
		}
	}
	summary := fmt.Sprintf("%d %s valid, %d invalid", valid, plural(valid, "skill", "skills"), invalid)
	if skipped > 0 {
		summary += fmt.Sprintf(", %d skipped", skipped)
	}
	if asJSON {
		warnf("%s\n", summary)
	} else {
		fmt.Fprintln(out, summary)
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("validate: writing the report: %w", err)
	}
	if invalid > 0 || empty > 0 {
		return errFailed
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
