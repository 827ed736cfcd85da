package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/host"
)

func init() {
	var f hostFlags
	var to string
	var replace bool
	cmd := &cobra.Command{
		Use:   "pull [flags] --to DIR " + serverArgs,
		Short: "Copy a server's skills into a folder, after verifying every file",
		Long: `pull materializes a server's skills for agents that only read skill folders:
every file of a skill is fetched and verified (size, SHA-256, SKILL.md
frontmatter) before anything is written, SKILL.md first, and a skill whose
SKILL.md fails is not read further. Each skill is written to DIR/NAME all at
once, as regular non-executable files.

  skillport pull http://127.0.0.1:8080/mcp --to .claude/skills

Pulled skills become local skills: review them before use, since the agent will
honour their frontmatter (allowed-tools included).

Exit status: 0 when every skill was pulled, 1 otherwise, 2 on usage errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usageErrorf("pull: --to DIR is required")
			}
			origins, err := f.origins(cmd, args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return runPull(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, origins, to, replace)
		},
	}
	f.register(cmd, false)
	cmd.Flags().StringVar(&to, "to", "", "folder to write skills into (each skill in DIR/NAME)")
	cmd.Flags().BoolVar(&replace, "replace", false, "replace skill folders that already exist")
	cmd.Flags().StringArrayVar(&f.only, "skill", nil, "pull only the skill at `PATH` (e.g. acme/pdf; repeatable)")
	rootCmd.AddCommand(hostCommand(cmd))
}

func runPull(ctx context.Context, stdout, stderr io.Writer, f *hostFlags, origins []host.Origin, to string, replace bool) error {
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
			fmt.Fprintf(stderr, "skillport: %s: %s\n", o.Label, sanitizeLine(o.Err.Error()))
		}
	}
	pulled, failed := 0, 0
	// Folder names are compared as Materialize compares file names, so that
	// two skills never share a folder on a case-insensitive filesystem.
	type pulledTo struct{ skill, dir string }
	names := map[string]pulledTo{}
	wanted := map[string]bool{}
	for _, p := range f.only {
		wanted[p] = false
	}
	for _, e := range h.Skills() {
		if e.Kind != host.KindMCP {
			continue
		}
		if len(wanted) > 0 {
			if _, ok := wanted[e.Path]; !ok {
				continue
			}
			wanted[e.Path] = true
		}
		if prev, dup := names[host.FoldName(e.Name)]; dup {
			failed++
			fmt.Fprintf(stderr, "skillport: %s: not pulled: %s already goes to %s (folder names are compared ignoring case); pull it separately into another folder\n", e.CLIName(), prev.skill, prev.dir)
			continue
		}
		files, err := h.FetchAll(ctx, e)
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "skillport: %s: not pulled: %s\n", e.CLIName(), sanitizeLine(err.Error()))
			continue
		}
		dir, err := host.Materialize(to, e, files, &host.MaterializeOptions{Replace: replace})
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "skillport: %s\n", sanitizeLine(err.Error()))
			continue
		}
		names[host.FoldName(e.Name)] = pulledTo{e.CLIName(), dir}
		pulled++
		fmt.Fprintf(stdout, "%s -> %s (%d files verified)\n", e.CLIName(), dir, len(files))
	}
	for _, p := range f.only {
		if !wanted[p] {
			failed++
			fmt.Fprintf(stderr, "skillport: --skill %s: no such skill; skillport ls lists the skill paths\n", sanitizeLine(p))
		}
	}
	fmt.Fprintf(stdout, "%d skills pulled, %d failed\n", pulled, failed)
	if failed > 0 || !ok {
		return errFailed
	}
	return nil
}
