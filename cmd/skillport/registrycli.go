package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/internal/scan"
)

// The registry subcommands' output beyond the tables of registry.go:
// --json of versions, log and diff, the text diff, what a yank leaves
// served, and registry ls.

// addJSONFlags gives the named subcommands of reg a --json flag.
func addJSONFlags(reg *cobra.Command, names ...string) {
	for _, c := range reg.Commands() {
		for _, n := range names {
			if c.Name() == n {
				c.Flags().Bool("json", false, "print JSON for programs")
			}
		}
	}
}

func asJSON(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool("json")
	return v
}

type versionJSON struct {
	Version     int        `json:"version"`
	Current     bool       `json:"current"`
	Yanked      bool       `json:"yanked"`
	YankedBy    string     `json:"yankedBy,omitempty"`
	YankedAt    *time.Time `json:"yankedAt,omitempty"`
	PublishedBy string     `json:"publishedBy"`
	PublishedAt time.Time  `json:"publishedAt"`
	Files       int        `json:"files"`
	Size        int64      `json:"size"`
	Commit      string     `json:"commit,omitempty"`
	Digest      string     `json:"digest"`
	// Scanned is absent for a version never scanned; findings is [] for
	// one scanned clean.
	Scanned  *time.Time     `json:"scannedAt,omitempty"`
	Findings []scan.Finding `json:"findings,omitempty"`
	// State is the review state: published (review off), pending,
	// approved or rejected. A current version that is pending is served
	// unreviewed (observe mode).
	State        string     `json:"state"`
	ReviewedBy   string     `json:"reviewedBy,omitempty"`
	ReviewedAt   *time.Time `json:"reviewedAt,omitempty"`
	ReviewReason string     `json:"reviewReason,omitempty"`
}

func versionsJSON(vs []registry.Version) []versionJSON {
	out := make([]versionJSON, len(vs))
	for i, v := range vs {
		out[i] = versionJSON{Version: v.Version, Current: v.Current, Yanked: v.YankedBy != "", YankedBy: v.YankedBy,
			PublishedBy: v.PublishedBy, PublishedAt: v.PublishedAt.UTC(), Files: v.Files, Size: v.Size, Commit: v.Commit, Digest: v.Digest,
			State: v.Review, ReviewedBy: v.ReviewedBy, ReviewReason: v.ReviewReason}
		if v.ReviewedBy != "" {
			at := v.ReviewedAt.UTC()
			out[i].ReviewedAt = &at
		}
		if v.YankedBy != "" {
			at := v.YankedAt.UTC()
			out[i].YankedAt = &at
		}
		if !v.Scanned.IsZero() {
			at := v.Scanned.UTC()
			out[i].Scanned = &at
			out[i].Findings = v.Findings
		}
	}
	return out
}

type eventJSON struct {
	At      time.Time `json:"at"`
	Who     string    `json:"who"`
	Action  string    `json:"action"`
	Path    string    `json:"path,omitempty"`
	Version int       `json:"version,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	Outcome string    `json:"outcome"` // ok, or refused
}

func eventsJSON(evs []registry.Event) []eventJSON {
	out := make([]eventJSON, len(evs))
	for i, e := range evs {
		out[i] = eventJSON{At: e.At.UTC(), Who: e.Who, Action: e.Action, Path: e.Path, Version: e.Version, Detail: e.Detail, Outcome: e.Outcome}
	}
	return out
}

type fileChangeJSON struct {
	Path      string `json:"path"`
	Change    string `json:"change"`
	OldSize   int64  `json:"oldSize,omitempty"`
	NewSize   int64  `json:"newSize,omitempty"`
	OldDigest string `json:"oldDigest,omitempty"`
	NewDigest string `json:"newDigest,omitempty"`
	// Diff is the unified diff of a changed text file (bounded; see
	// registry.TextDiff), absent for other files.
	Diff string `json:"diff,omitempty"`
}

// printDiff prints the files that differ from version a to b, each
// changed text file followed by its unified diff, or all of it as JSON.
func printDiff(ctx context.Context, cmd *cobra.Command, conn *pgx.Conn, path string, a, b int, d []registry.FileChange) error {
	out := make([]fileChangeJSON, len(d))
	for i, c := range d {
		text, err := registry.TextDiff(ctx, conn, path, a, b, c)
		if err != nil {
			return err
		}
		out[i] = fileChangeJSON{Path: c.Path, Change: c.Change, OldSize: c.OldSize, NewSize: c.NewSize, OldDigest: c.OldDigest, NewDigest: c.NewDigest, Diff: text}
	}
	w := cmd.OutOrStdout()
	if asJSON(cmd) {
		return writeJSON(w, out)
	}
	for _, c := range out {
		switch c.Change {
		case "added":
			fmt.Fprintf(w, "+ %s (%s)\n", esc(c.Path), size(c.NewSize))
		case "removed":
			fmt.Fprintf(w, "- %s (%s)\n", esc(c.Path), size(c.OldSize))
		default:
			fmt.Fprintf(w, "~ %s (%s -> %s)\n", esc(c.Path), size(c.OldSize), size(c.NewSize))
			// The content is the publisher's: escaped like every other
			// string this command prints to a terminal.
			for line := range strings.Lines(c.Diff) {
				fmt.Fprintln(w, esc(strings.TrimSuffix(line, "\n")))
			}
		}
	}
	if len(d) == 0 {
		fmt.Fprintln(w, "no file differs")
	}
	return nil
}

// printYanked says what a yank of version v leaves served: the version
// the skill fell back to, or that it is no longer served.
func printYanked(ctx context.Context, cmd *cobra.Command, conn *pgx.Conn, path string, v int) error {
	cur, err := registry.Served(ctx, conn, path)
	if err != nil {
		return err
	}
	printYankedAt(cmd, path, v, cur)
	return nil
}

// printYankedAt says what a yank of version v left served: version cur,
// or nothing when cur is 0.
func printYankedAt(cmd *cobra.Command, path string, v, cur int) {
	w := cmd.OutOrStdout()
	switch {
	case cur == 0:
		fmt.Fprintf(w, "%s version %d yanked; %s is no longer served: no other version is left (publish a new one)\n", path, v, path)
	default:
		fmt.Fprintf(w, "%s version %d yanked; %s serves version %d\n", path, v, path, cur)
	}
}

func registryLsCmd() *cobra.Command {
	c := &cobra.Command{Use: "ls [PREFIX]", Short: "List the registry's skills with the version each serves", Args: cobra.MaximumNArgs(1),
		Long: `ls lists the skills of the registry (those at or below PREFIX, e.g. acme/billing),
with the version each serves ("-" for a skill no longer served), how many
versions it has, when it last changed and its digest. On a terminal it is a
table; piped, tab-separated lines without a header; --json for programs.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			prefix := ""
			if len(args) == 1 {
				prefix = args[0]
			}
			return withRegistry(cmd, "registry ls", func(ctx context.Context, conn *pgx.Conn) error {
				ls, err := registry.List(ctx, conn, prefix)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if asJSON(cmd) {
					if ls == nil {
						ls = []registry.Listed{}
					}
					return writeJSON(w, ls)
				}
				tty := terminalWidth(w) > 0
				if len(ls) == 0 && tty {
					where := "the registry"
					if prefix != "" {
						where = esc(prefix)
					}
					fmt.Fprintf(w, "no skill in %s\n", where)
					return nil
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				if tty {
					fmt.Fprintln(tw, "SKILL\tSERVES\tVERSIONS\tUPDATED\tDIGEST")
				}
				for _, l := range ls {
					cur := "-"
					if l.Current > 0 {
						cur = fmt.Sprint(l.Current)
					}
					row := []string{esc(l.Path), cur, fmt.Sprint(l.Versions), l.UpdatedAt.UTC().Format(time.RFC3339), l.Digest}
					if !tty {
						fmt.Fprintln(w, strings.Join(row, "\t"))
						continue
					}
					fmt.Fprintln(tw, strings.Join(row, "\t"))
				}
				return tw.Flush()
			})
		}}
	c.Flags().Bool("json", false, "print JSON for programs")
	return c
}
