package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/sanitize"
)

func init() {
	var f hostFlags
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

Exit status: 0 when every server could be listed, 1 otherwise, 2 on usage errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			origins, err := f.origins(cmd, args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return runLs(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, origins, asJSON)
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	rootCmd.AddCommand(hostCommand(cmd))
}

type lsSkill struct {
	Origin      string   `json:"origin"`
	Kind        string   `json:"kind"`
	Name        string   `json:"name"`
	Qualified   string   `json:"qualified"`
	URI         string   `json:"uri"`
	Description string   `json:"description"`
	Files       int      `json:"files"`
	Size        int64    `json:"size"`
	Dynamic     bool     `json:"dynamic,omitempty"`
	Status      string   `json:"status"`
	SharedWith  []string `json:"sharedWith,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
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
	Error         string `json:"error,omitempty"`
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
	ok := reportOrigins(stderr, h)
	for _, o := range h.Origins() {
		if o.Err != nil {
			fmt.Fprintf(stderr, "skillport: %s (%s): %s\n", o.Label, o.Where, sanitizeLine(o.Err.Error()))
		}
	}
	display := map[string]string{}
	for _, o := range origins {
		display[o.Label] = o.Where()
	}
	var skills []lsSkill
	for _, e := range h.Skills() {
		desc, _ := sanitize.Line(e.Description())
		s := lsSkill{
			Origin: e.Origin, Kind: e.Kind.String(), Name: strings.TrimPrefix(e.CLIName(), e.Origin+":"), Qualified: e.Qualified,
			URI: e.URI, Description: desc, Files: len(e.Files), Size: e.Size, Dynamic: e.Dynamic,
			Status: e.Status(), SharedWith: e.SharedWith, Warnings: e.Warnings,
		}
		if e.Kind == host.KindFilesystem {
			s.Description = "(" + display[e.Origin] + ") " + desc
		}
		skills = append(skills, s)
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
				DirectoryRead: o.DirectoryRead, Skills: o.Skills, Partial: o.Partial}
			if o.Err != nil {
				lo.Error = o.Err.Error()
			}
			out.Origins = append(out.Origins, lo)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ORIGIN\tNAME\tDESCRIPTION\tFILES\tSTATUS")
		for _, s := range skills {
			files := fmt.Sprint(s.Files)
			if s.Dynamic {
				files = "-"
			}
			name, _ := sanitize.Line(s.Name)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Origin, sanitize.Truncate(name, 40), sanitize.Truncate(s.Description, 46), files, s.Status)
		}
		tw.Flush()
		if len(skills) == 0 {
			fmt.Fprintln(stderr, "skillport: no skills found")
		}
	}
	if !ok {
		return errFailed
	}
	return nil
}
