package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/internal/ociref"
)

func init() {
	var f hostFlags
	var policy string
	var yes bool
	cmd := &cobra.Command{
		Use:   "load [flags] NAME [URL | git+URL] | load [flags] ORIGIN:NAME --config FILE",
		Short: "Load a skill the way a model would receive it, after approval and verification",
		Long: `load finds ORIGIN:NAME (as ls shows it; a bare NAME works when it is unique),
asks for approval, reads and verifies SKILL.md, and prints exactly what the
model would receive from the read_skill tool. The skill comes from the server
given after the name (a URL or git source), or from --config and --skills-dir.

  skillport load refunds http://127.0.0.1:8080/mcp --yes
  skillport load docs:pdf-processing --config skillport.json

Approval is asked on the terminal and can be remembered for this exact content
(approvals live in the user configuration directory); --policy FILE applies a
policy file first; --yes approves this one load. Without a terminal, policy or
--yes, loads are refused. Verified files are cached in the user cache directory.

Exit status: 0 on success, 1 when the skill was refused or failed
verification, 2 on usage errors.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 && isServerArg(args[0]) && !isServerArg(args[1]) {
				return usageErrorf("load: the skill name comes first, then the server: skillport load %s %s", args[1], args[0])
			}
			if len(args) < 1 || len(args) > 2 || cmd.ArgsLenAtDash() >= 0 {
				return usageErrorf("load: name one skill, then its server: skillport load NAME URL, or skillport load ORIGIN:NAME --config FILE")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.trust.load("load"); err != nil {
				return err
			}
			if len(args) == 1 && f.config == "" && len(f.skillDirs) == 0 {
				return usageErrorf("load: say where %s comes from: a server URL after the name, --config FILE or --skills-dir DIR", esc(args[0]))
			}
			origins, err := f.origins(cmd, args[1:], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return runLoad(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, origins, args[0], policy, yes)
		},
	}
	f.register(cmd, true)
	f.trust.register(cmd)
	cmd.Flags().StringVar(&policy, "policy", "", "approval policy file (JSON allow/deny rules)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "approve this load without asking (not remembered)")
	rootCmd.AddCommand(hostCommand(cmd))
}

func runLoad(ctx context.Context, stdout, stderr io.Writer, f *hostFlags, origins []host.Origin, name, policy string, yes bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	approver, store, err := approvalSetup(policy, yes)
	if err != nil {
		return usageErrorf("load: %s", esc(err.Error()))
	}
	// Only the named origin is needed; connecting the others would only cost time.
	if label, _, ok := strings.Cut(name, ":"); ok {
		var only []host.Origin
		for _, o := range origins {
			if o.Label == label || o.Dir != "" {
				only = append(only, o)
			}
		}
		if len(only) > 0 {
			origins = only
		}
	}
	h, err := f.newHost(ctx, origins, &host.Options{Approver: approver, Approvals: store, Cache: defaultCache()})
	if err != nil {
		return err
	}
	defer h.Close()
	reportOrigins(stderr, h, f)
	// A bare name two skills share is ambiguous, even when the registry
	// gave one of them the bare name as its qualified name.
	if !strings.ContainsAny(name, ":/") && !strings.Contains(name, "__") {
		var same []string
		for _, e := range f.skills(h) {
			if e.Name == name {
				same = append(same, esc(e.CLIName()))
			}
		}
		if len(same) > 1 {
			return &exitError{code: 1, err: fmt.Errorf("load: %s names %d skills: %s; name one as ORIGIN:NAME", esc(name), len(same), strings.Join(same, ", "))}
		}
	}
	e, err := h.Lookup(name)
	if err == nil && !f.admits(e) {
		err = fmt.Errorf("%w %q: the configuration's include/exclude lists leave it out", host.ErrUnknownSkill, name)
	}
	if err != nil {
		if msg := refusedSkill(h, name); msg != "" {
			return &exitError{code: 1, err: fmt.Errorf("load: %s", esc(msg))}
		}
		if errors.Is(err, host.ErrUnknownSkill) {
			return usageErrorf("load: %s; see skillport ls --config %s", esc(err.Error()), esc(f.config))
		}
		return &exitError{code: 1, err: fmt.Errorf("load: %s", esc(err.Error()))}
	}
	out, err := h.Tools().ReadSkill(ctx, e.Qualified)
	if errors.Is(err, host.ErrNotApproved) && !yes && policy == "" && !isTerminal(os.Stdin) {
		return &exitError{code: 1, err: fmt.Errorf("load: %s; there is no terminal to ask on: pass --yes to approve this load, or --policy FILE", esc(err.Error()))}
	}
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("load: %s", esc(err.Error()))}
	}
	_, err = io.WriteString(stdout, out)
	return err
}

// isServerArg reports whether a command-line argument names a server (a
// URL or git source) rather than a skill.
func isServerArg(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") || gitsource.IsSpec(s) || ociref.IsSpec(s)
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
