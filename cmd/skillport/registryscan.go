package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/internal/scan"
	"github.com/skillport/skillport/internal/termsafe"
	"github.com/skillport/skillport/internal/web"
)

// The scanning commands: publish's scanner flags, registry rescan and
// registry scan-policy (docs/registry-scanning.md).

func scannerFlags(f *pflag.FlagSet) {
	f.StringArray("scanner", nil, "also run the external scanner `NAME=COMMAND` on each new version: it gets the skill folder as its last argument and prints SARIF 2.1.0 (repeatable)")
	f.Duration("scanner-timeout", scan.DefaultTimeout, "kill an external scanner still running after `D`; its scan is reported as failed")
}

// scanOptions are the scanners a publish or rescan runs: the built-in one
// always, and the external ones named.
func scanOptions(cmd *cobra.Command, what string) (*registry.ScanOptions, error) {
	f := cmd.Flags()
	specs, _ := f.GetStringArray("scanner")
	timeout, _ := f.GetDuration("scanner-timeout")
	if timeout <= 0 {
		return nil, usageErrorf("%s: --scanner-timeout must be positive", what)
	}
	o := &registry.ScanOptions{Builtin: true}
	for _, s := range specs {
		e, err := scan.ParseExternal(s)
		if err != nil {
			return nil, usageErrorf("%s: --scanner: %v", what, err)
		}
		e.Timeout = timeout
		o.External = append(o.External, e)
	}
	return o, nil
}

// printFindings prints one finding a line, terminal-safe: a finding
// quotes what a skill hides, and a skill is untrusted.
func printFindings(w io.Writer, indent string, fs []scan.Finding) {
	for _, f := range fs {
		fmt.Fprintf(w, "%s! %s\n", indent, termsafe.Escape(f.String()))
	}
}

func findingsSummary(v registry.Version) string {
	if v.Scanned.IsZero() {
		return "not scanned"
	}
	var errs, others int
	for _, f := range v.Findings {
		if f.Level == scan.LevelError {
			errs++
		} else {
			others++
		}
	}
	if errs+others == 0 {
		return "none"
	}
	return fmt.Sprintf("%d errors, %d warnings", errs, others)
}

func rescanCmd() *cobra.Command {
	c := &cobra.Command{Use: "rescan [NS/SKILL]", Short: "Run the scanners again on the current versions at or below NS/SKILL (every skill without it)", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target := ""
			if len(args) == 1 {
				target = args[0]
			}
			o, err := scanOptions(cmd, "registry rescan")
			if err != nil {
				return err
			}
			return withRegistry(cmd, "registry rescan", func(ctx context.Context, conn *pgx.Conn) error {
				res, err := registry.Rescan(ctx, conn, target, o, who(cmd))
				if err != nil {
					return err
				}
				if asJSON(cmd) {
					return writeJSON(cmd.OutOrStdout(), res)
				}
				w := cmd.OutOrStdout()
				for _, s := range res {
					fmt.Fprintf(w, "%s v%d: %d findings\n", s.Path, s.Version, len(s.Findings))
					printFindings(w, "  ", s.Findings)
				}
				return nil
			})
		}}
	scannerFlags(c.Flags())
	return c
}

func scanPolicyCmd() *cobra.Command {
	var mode, tools string
	var anyTools bool
	c := &cobra.Command{Use: "scan-policy [NS]", Short: "Show the scan policies, or set NS's: --mode warn|block, --allowed-tools", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set := cmd.Flags().Changed("mode") || cmd.Flags().Changed("allowed-tools") || anyTools
			if set && len(args) == 0 {
				return usageErrorf("registry scan-policy: name the namespace to set (\"\" for every namespace's default), e.g. registry scan-policy acme --mode block")
			}
			return withRegistry(cmd, "registry scan-policy", func(ctx context.Context, conn *pgx.Conn) error {
				if set {
					if mode == "" {
						mode = registry.PolicyWarn
					}
					p := registry.Policy{Namespace: args[0], Mode: mode}
					if !anyTools && cmd.Flags().Changed("allowed-tools") {
						p.AllowedTools = scan.SplitTools(tools)
						if p.AllowedTools == nil {
							p.AllowedTools = []string{}
						}
					}
					if err := registry.SetPolicy(ctx, conn, p, who(cmd)); err != nil {
						return err
					}
				}
				if _, err := registry.Migrate(ctx, conn); err != nil {
					return err
				}
				ps, err := registry.Policies(ctx, conn)
				if err != nil {
					return err
				}
				if asJSON(cmd) {
					return writeJSON(cmd.OutOrStdout(), ps)
				}
				w := cmd.OutOrStdout()
				if len(ps) == 0 {
					fmt.Fprintln(w, "no scan policies: every namespace warns")
				}
				for _, p := range ps {
					ns, allowed := p.Namespace, "any"
					if ns == "" {
						ns = `"" (default)`
					}
					if p.AllowedTools != nil {
						allowed = strings.Join(p.AllowedTools, " ")
					}
					fmt.Fprintf(w, "%s: %s, allowed-tools %s (set by %s at %s)\n", ns, p.Mode, allowed, p.UpdatedBy, p.UpdatedAt.UTC().Format(time.RFC3339))
				}
				return nil
			})
		}}
	c.Flags().StringVar(&mode, "mode", "", "warn (record findings) or block (refuse a publish with an error-level finding)")
	c.Flags().StringVar(&tools, "allowed-tools", "", "what skills of NS may pre-approve, e.g. \"Read Grep Bash(git:*)\" (\"Bash\" allows every Bash(...))")
	c.Flags().BoolVar(&anyTools, "any-tools", false, "check no allowed-tools (the default)")
	return c
}

// registryWeb shows a replica's versions, their review state, findings
// and usage on the web catalog's pages (web.Registry): one query of the
// versions per skill page, whose rows make both its sections.
type registryWeb struct{ rs *registry.Source }

func (r registryWeb) SkillInfo(ctx context.Context, path string) (*web.SkillInfo, error) {
	vs, err := r.rs.Versions(ctx, path)
	if errors.Is(err, registry.ErrUnknown) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	loads, err := r.rs.SkillLoads(ctx, []string{path}, registry.RecentLoadDays)
	if err != nil {
		return nil, err
	}
	info := &web.SkillInfo{Loads: loads[path].Loads, Callers: loads[path].Callers, LoadDays: registry.RecentLoadDays,
		Versions: make([]web.VersionInfo, 0, len(vs)), Reviews: make([]web.VersionState, 0, len(vs))}
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		state := ""
		switch {
		case v.YankedBy != "":
			state = "yanked"
		case v.Current:
			state = "current"
		}
		info.Versions = append(info.Versions, web.VersionInfo{Version: v.Version, State: state, PublishedBy: v.PublishedBy, PublishedAt: v.PublishedAt,
			Scanned: !v.Scanned.IsZero(), Findings: v.Findings})
		// The review state, yanked before all.
		review := web.VersionState{Version: v.Version, State: v.Review, Current: v.Current, PublishedBy: v.PublishedBy, PublishedAt: v.PublishedAt,
			ReviewedBy: v.ReviewedBy, Reason: v.ReviewReason, Digest: v.Digest}
		if v.YankedBy != "" {
			review.State, review.Reason = "yanked", ""
		}
		info.Reviews = append(info.Reviews, review)
	}
	return info, nil
}

func (r registryWeb) RecentLoads(ctx context.Context, paths []string) (map[string]int64, error) {
	loads, err := r.rs.SkillLoads(ctx, paths, registry.RecentLoadDays)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(loads))
	for p, l := range loads {
		out[p] = l.Loads
	}
	return out, nil
}

// scanFinding is a scan finding as a server's entry carries it under
// wire.MetaScanFindings.
type scanFinding struct {
	Scanner string `json:"scanner"`
	RuleID  string `json:"ruleId"`
	Level   string `json:"level"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// maxShownFindings bounds the findings verify takes from one entry: they
// come from the server.
const maxShownFindings = 100

// scanFindingsOf decodes the findings an entry carries; malformed ones
// are left out (a finding is information, not a reason to fail).
func scanFindingsOf(e *host.Entry) []scanFinding {
	if len(e.ScanFindings) == 0 {
		return nil
	}
	var fs []scanFinding
	if json.Unmarshal(e.ScanFindings, &fs) != nil {
		return nil
	}
	if len(fs) > maxShownFindings {
		fs = fs[:maxShownFindings]
	}
	return fs
}

// printScanFindings prints the findings of a verified skill, indented
// under it, terminal-safe (the server and the skill are untrusted).
func printScanFindings(w io.Writer, fs []scanFinding) {
	for _, f := range fs {
		printFindings(w, "     ", []scan.Finding{{Scanner: f.Scanner, RuleID: f.RuleID, Level: f.Level, File: f.File, Line: f.Line, Message: f.Message}})
	}
}
