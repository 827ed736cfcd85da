package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/termsafe"
)

func init() {
	var f hostFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [flags] " + serverArgs,
		Short: "Fetch every file of every skill a server lists and verify it against its entry",
		Long: `verify lists a server's skills and reads every file of every skill, checking
each against the entry's size and SHA-256 digest and each SKILL.md's frontmatter
against the entry, field by field. It prints one line per skill.

Entries that break the extension's rules, skills over the 512-file or 16 MiB
limits, and "dynamic" skills (unless --allow-dynamic) count as failures.

Checks follow the protocol revision the session negotiated: resultType,
ttlMs and cacheScope are required from 2026-07-28 only.

The summary line counts verified and failed skills and any problem with
the server's answers (printed on stderr); --json has the same in "ok",
"skills" and "problems".

Exit status: 0 when everything verified and nothing is counted as a
problem, 1 otherwise, 2 on usage errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.trust.load("verify"); err != nil {
				return err
			}
			origins, err := f.origins(cmd, args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return runVerify(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, origins, asJSON)
		},
	}
	f.register(cmd, false)
	f.trust.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object listing each skill's outcome")
	rootCmd.AddCommand(hostCommand(cmd))
}

// verifyResult is one skill's outcome, for --json.
type verifyResult struct {
	Skill  string `json:"skill"`
	Status string `json:"status"` // ok, failed, skipped
	Files  int    `json:"files,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Error  string `json:"error,omitempty"`
	// Signature is the outcome of the signature check (docs/signing.md).
	Signature string `json:"signature,omitempty"`
	// ScanFindings are the server's registry's scan findings of the
	// version served (docs/registry-scanning.md); they are shown, and do
	// not fail verification: the bytes are what was published.
	ScanFindings []scanFinding `json:"scanFindings,omitempty"`
}

func runVerify(ctx context.Context, stdout, stderr io.Writer, f *hostFlags, origins []host.Origin, asJSON bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	h, err := f.newHost(ctx, origins, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	ok := reportOrigins(stderr, h, f)
	// Every diagnostic but a tolerated deviation fails verification; the
	// summary counts them, so the exit status agrees with what is printed.
	var problems []string
	for _, d := range h.Diagnostics() {
		if !d.Deviation {
			problems = append(problems, d.String())
		}
	}
	var results []verifyResult
	good, bad := 0, 0
	for _, e := range f.skills(h) {
		if e.Kind != host.KindMCP {
			continue
		}
		r := verifyResult{Skill: e.CLIName(), ScanFindings: scanFindingsOf(e)}
		if e.Dynamic && f.allowDynamic {
			r.Status, r.Error = "skipped", "dynamic: the server publishes no digests, so there is nothing to verify"
		} else if files, err := h.FetchAll(ctx, e); err != nil {
			bad++
			r.Status, r.Error = "failed", err.Error()
		} else {
			good++
			r.Status, r.Files, r.Signature = "ok", len(files), e.SignatureNote
			for _, fl := range files {
				r.Size += int64(len(fl.Data))
			}
		}
		results = append(results, r)
		if asJSON {
			continue
		}
		switch r.Status {
		case "ok":
			line := fmt.Sprintf("ok   %s: %s, %s verified", esc(r.Skill), count(r.Files, "file", "files"), humanSize(r.Size))
			if r.Signature != "" {
				line += "; " + r.Signature
			}
			fmt.Fprintln(stdout, line)
			printScanFindings(stdout, r.ScanFindings)
		case "skipped":
			fmt.Fprintf(stdout, "SKIP %s: %s\n", esc(r.Skill), r.Error)
		default:
			fmt.Fprintf(stdout, "FAIL %s: %s\n", esc(r.Skill), strings.Join(termsafe.Lines(r.Error), "\n  "))
		}
	}
	// Entries a server listed that the host refused (invalid, over a
	// limit) fail verification too: the summary must agree with the exit
	// status, and a skill that cannot be pulled is not "verified".
	shown := map[string]int{}
	for _, d := range h.Diagnostics() {
		if !d.Refused {
			continue
		}
		shown[d.Origin]++
		bad++
		what := d.Origin
		if d.URI != "" {
			what += ": " + d.URI
		}
		r := verifyResult{Skill: what, Status: "failed", Error: "refused: " + d.Message}
		results = append(results, r)
		if !asJSON {
			fmt.Fprintf(stdout, "FAIL %s: %s\n", esc(r.Skill), strings.Join(termsafe.Lines(r.Error), "\n  "))
		}
	}
	for _, o := range h.Origins() {
		if more := o.Refused - shown[o.Label]; more > 0 {
			bad += more
			r := verifyResult{Skill: o.Label, Status: "failed", Error: fmt.Sprintf("refused %d more entries (their diagnostics were left out)", more)}
			results = append(results, r)
			if !asJSON {
				fmt.Fprintf(stdout, "FAIL %s: %s\n", esc(r.Skill), r.Error)
			}
		}
	}
	// Entries of a site the host refused (digest mismatch, bounds…) fail
	// verification: they are skills the site publishes that cannot be used.
	for _, w := range f.refused {
		bad++
		results = append(results, verifyResult{Skill: f.label, Status: "failed", Error: w})
		if !asJSON {
			fmt.Fprintf(stdout, "FAIL %s: %s\n", esc(f.label), strings.Join(termsafe.Lines(w), "\n  "))
		}
	}
	if asJSON {
		if results == nil {
			results = []verifyResult{}
		}
		if problems == nil {
			problems = []string{}
		}
		out := map[string]any{"ok": bad == 0 && ok && len(problems) == 0, "skills": results, "problems": problems}
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		line := fmt.Sprintf("%s verified, %d failed", count(good, "skill", "skills"), bad)
		if len(problems) > 0 {
			line += fmt.Sprintf(", %s with the server's answers (on stderr)", count(len(problems), "problem", "problems"))
		}
		fmt.Fprintln(stdout, line)
	}
	if bad > 0 || !ok || len(problems) > 0 {
		return errFailed
	}
	return nil
}
