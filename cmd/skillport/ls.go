package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/sanitize"
)

func init() {
	f := hostFlags{defaultTimeout: lsTimeout}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls [flags] " + serverArgs,
		Short: "List the skills of MCP servers and local skill folders, without fetching any file",
		Long: `ls connects to MCP servers, lists their skills with skills/list and prints them
with local skills. It reads no skill file: nothing is fetched until a skill is
loaded.

  skillport ls http://127.0.0.1:8080/mcp
  skillport ls -- node server.mjs ./skills
  skillport ls --config ~/.cursor/mcp.json

NAME is what to pass to load as ORIGIN:NAME. STATUS says how the skill would be
loaded (verified-on-load, filesystem), or why it would not (declined: …), or
that its name is shared with another skill (use the qualified form shown).

PATH is the skill's path; pull --skill takes it, the NAME, or ORIGIN:NAME.

On a terminal the table fits its width (PATH shows from 110 columns);
piped, ls prints one tab-separated row per skill (origin, name,
description, files, status, path), nothing cut, no header. A server that answers but serves no skills (most tool servers) is
noted, not an error. Servers are given --timeout (default 3s) to answer.

Exit status: 0 when every server answered, 1 when one failed, 2 on usage errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.trust.load("ls"); err != nil {
				return err
			}
			origins, err := f.origins(cmd, args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return runLs(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, origins, asJSON)
		},
	}
	f.register(cmd, true)
	f.trust.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	rootCmd.AddCommand(hostCommand(cmd))
}

// pathWidth is the narrowest terminal on which ls shows the PATH column.
const pathWidth = 110

type lsSkill struct {
	Origin      string   `json:"origin"`
	Kind        string   `json:"kind"`
	Name        string   `json:"name"`
	Qualified   string   `json:"qualified"`
	Path        string   `json:"path"`
	URI         string   `json:"uri"`
	Description string   `json:"description"`
	Files       int      `json:"files"`
	Size        int64    `json:"size"`
	Dynamic     bool     `json:"dynamic,omitempty"`
	Status      string   `json:"status"`
	SharedWith  []string `json:"sharedWith,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	// Signer is who signed the skill, as the trust policy verified it;
	// Signature what the policy says of its signature (docs/signing.md).
	Signer    string `json:"signer,omitempty"`
	Signature string `json:"signature,omitempty"`
}

type lsOrigin struct {
	Label         string `json:"label"`
	Kind          string `json:"kind"`
	Where         string `json:"where"`
	ReportedName  string `json:"reportedName,omitempty"`
	Declared      bool   `json:"declared"`
	DirectoryRead bool   `json:"directoryRead,omitempty"`
	Skills        int    `json:"skills"`
	Partial       bool   `json:"partial,omitempty"`
	NoSkills      bool   `json:"noSkills,omitempty"`
	// Refused counts the entries the origin listed that the host left out
	// (each named on stderr), as verify counts them.
	Refused int    `json:"refused"`
	Error   string `json:"error,omitempty"`
}

func runLs(ctx context.Context, stdout, stderr io.Writer, f *hostFlags, origins []host.Origin, asJSON bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	h, err := f.newHost(ctx, origins, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	ok := reportOrigins(stderr, h, f)
	var skills []lsSkill
	for _, e := range f.skills(h) {
		desc, _ := sanitize.Line(e.Description())
		skills = append(skills, lsSkill{
			Origin: e.Origin, Kind: e.Kind.String(), Name: strings.TrimPrefix(e.CLIName(), e.Origin+":"), Qualified: e.Qualified, Path: e.Path,
			URI: e.URI, Description: desc, Files: len(e.Files), Size: e.Size, Dynamic: e.Dynamic,
			Status: e.Status(), SharedWith: e.SharedWith, Warnings: e.Warnings,
			Signer: e.Signer, Signature: e.SignatureNote,
		})
	}
	if asJSON {
		out := struct {
			Skills  []lsSkill  `json:"skills"`
			Origins []lsOrigin `json:"origins"`
		}{Skills: skills}
		if out.Skills == nil {
			out.Skills = []lsSkill{}
		}
		for _, o := range h.Origins() {
			lo := lsOrigin{Label: o.Label, Kind: o.Kind.String(), Where: o.Where, ReportedName: o.ReportedName, Declared: o.Declared,
				DirectoryRead: o.DirectoryRead, Skills: o.Skills, Partial: o.Partial, NoSkills: outcome(o) == originNoSkills, Refused: o.Refused}
			if o.Label == f.label {
				lo.Refused += len(f.refused) // a site's entries refused before the host saw them
			}
			if o.Err != nil {
				lo.Error = o.Err.Error()
			}
			out.Origins = append(out.Origins, lo)
		}
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		// The path (what pull --skill also takes) is the last column; a
		// terminal narrower than pathWidth keeps the description instead.
		header := []string{"ORIGIN", "NAME", "DESCRIPTION", "FILES", "STATUS", "PATH"}
		w := terminalWidth(stdout)
		if w > 0 && w < pathWidth {
			header = header[:5]
		}
		rows := make([][]string, 0, len(skills))
		for _, s := range skills {
			files := fmt.Sprint(s.Files)
			if s.Dynamic {
				files = "-"
			}
			rows = append(rows, []string{esc(s.Origin), esc(s.Name), esc(s.Description), files, esc(s.Status), esc(s.Path)}[:len(header)])
		}
		printTable(stdout, header, rows, 2)
		if len(skills) == 0 && ok { // a failure was said above; "no skills" would bury it
			fmt.Fprintln(stderr, "skillport: no skills found")
		}
	}
	if !ok {
		return errFailed
	}
	return nil
}

// printTable prints rows for people on a terminal (a header, columns
// aligned, the flex column cut so that a line fits the terminal's width)
// and for programs elsewhere (no header, one tab-separated row per line,
// nothing cut). Cells must already be escaped.
func printTable(w io.Writer, header []string, rows [][]string, flex int) {
	width := terminalWidth(w)
	if width == 0 {
		for _, r := range rows {
			fmt.Fprintln(w, strings.Join(r, "\t"))
		}
		return
	}
	const gap = 2
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = len(h)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	// The other columns keep their width up to a cap; the flex column gets
	// what is left, and at least a few characters.
	caps := 24
	others := 0
	for i := range widths {
		if i != flex {
			widths[i] = min(widths[i], caps)
			others += widths[i] + gap
		}
	}
	widths[flex] = max(12, min(widths[flex], width-others-1))
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			c = sanitize.Truncate(c, widths[i])
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+gap))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
}
