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
	cmd := &cobra.Command{
		Use:   "verify [flags] " + serverArgs,
		Short: "Fetch every file of every skill a server lists and verify it against its entry",
		Long: `verify lists a server's skills and reads every file of every skill, checking
each against the entry's size and SHA-256 digest and each SKILL.md's frontmatter
against the entry, field by field. It prints one line per skill.

Entries that break the extension's rules, skills over the 512-file or 16 MiB
limits, and "dynamic" skills (unless --allow-dynamic) count as failures.

Exit status: 0 when everything verified, 1 otherwise, 2 on usage errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			origins, err := f.origins(cmd, args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return runVerify(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, origins)
		},
	}
	f.register(cmd, false)
	rootCmd.AddCommand(hostCommand(cmd))
}

func runVerify(ctx context.Context, stdout, stderr io.Writer, f *hostFlags, origins []host.Origin) error {
	if ctx == nil {
		ctx = context.Background()
	}
	h, err := f.newHost(ctx, origins, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	ok := reportOrigins(stderr, h)
	for _, d := range h.Diagnostics() {
		if d.Severity != host.Deviation { // a tolerated deviation is reported above, not failed
			ok = false
		}
	}
	for _, o := range h.Origins() {
		if o.Err != nil {
			fmt.Fprintf(stdout, "FAIL %s: %s\n", o.Label, sanitizeLine(o.Err.Error()))
		}
	}
	good, bad := 0, 0
	for _, e := range h.Skills() {
		if e.Kind != host.KindMCP {
			continue
		}
		if e.Dynamic && f.allowDynamic {
			fmt.Fprintf(stdout, "SKIP %s: dynamic: the server publishes no digests, so there is nothing to verify\n", e.CLIName())
			continue
		}
		files, err := h.FetchAll(ctx, e)
		if err != nil {
			bad++
			fmt.Fprintf(stdout, "FAIL %s: %s\n", e.CLIName(), sanitizeLine(err.Error()))
			continue
		}
		good++
		var n int64
		for _, fl := range files {
			n += int64(len(fl.Data))
		}
		fmt.Fprintf(stdout, "ok   %s: %d files, %d bytes verified\n", e.CLIName(), len(files), n)
	}
	fmt.Fprintf(stdout, "%d skills verified, %d failed\n", good, bad)
	if bad > 0 || !ok {
		return errFailed
	}
	return nil
}
