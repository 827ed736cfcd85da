package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/install"
)

func init() {
	var o installFlags
	var policy string
	var yes bool
	cmd := &cobra.Command{
		Use:   "update [--project] [NAME...]",
		Short: "Apply what outdated shows: changed skills, after approval, and skills removed at their source",
		Long: `update fetches the skills of skills.lock (or only the NAMEs given) again
from their recorded sources, verified as install verifies, and applies what
outdated shows: for each skill that changed it prints the files changed,
added and removed, asks for approval of the new content, and writes it into
every folder the lock records for the skill; a skill its source no longer
has is removed from those folders (a folder edited by hand is left alone
unless --force). Then skills.lock is rewritten.

Approval is the one load asks for, bound to the exact content: a
remembered approval of this content, --policy FILE, --yes, or the terminal.
Without any of them a changed skill is not updated. Skills from a folder
are your own files and, as for load, need no approval. A changed skill no
longer signed by the signer skills.lock records (verified with
--trusted-key or --trust-policy, as install verifies) is refused unless
--allow-signer-change. A skill the host refuses (an untrusted signature,
an invalid entry) fails and is left in place: it is not removed at the
source.

  skillport update              # every skill of the user's skills.lock
  skillport update --project refunds --yes

--frozen, or CI=true in the environment, refuses to update: in CI the lock
is never rewritten (skillport install --frozen checks it).

Exit status: 0 when every skill is current or was updated, 1 when one was
not (refused approval, a failed source, a folder that differs), 2 on usage
errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.trust.load("update"); err != nil {
				return err
			}
			return runUpdate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &o, args, policy, yes)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.project, "project", false, "update the current project's skills (default: the user's)")
	fl.BoolVar(&o.frozen, "frozen", false, "refuse to update (as CI=true does); install --frozen is the check for CI")
	fl.BoolVar(&o.force, "force", false, "remove the folders of a skill removed at its source even when they differ from skills.lock")
	fl.DurationVar(&o.timeout, "timeout", host.DefaultCallTimeout, "timeout of each call to a server")
	fl.StringVar(&policy, "policy", "", "approval policy file (JSON allow/deny rules), as load takes it")
	fl.BoolVarP(&yes, "yes", "y", false, "approve the changed skills without asking (not remembered)")
	o.trust.register(cmd)
	fl.BoolVar(&o.allowSignerChange, "allow-signer-change", false, "accept changed skills now signed by someone other than the signer skills.lock records")
	rootCmd.AddCommand(hostCommand(cmd))
}

func runUpdate(ctx context.Context, stdout, stderr io.Writer, o *installFlags, names []string, policy string, yes bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.frozen {
		return usageErrorf("update: --frozen never rewrites %s, and update rewrites it; run skillport install --frozen to check the lock", install.LockName)
	}
	if os.Getenv("CI") == "true" {
		return &exitError{code: 1, err: fmt.Errorf("update: CI=true: in CI %s is never rewritten; update outside CI, commit the lock, and let CI run skillport install --frozen", install.LockName)}
	}
	approver, store, err := approvalSetup(policy, yes)
	if err != nil {
		return usageErrorf("update: %s", esc(err.Error()))
	}
	lockPath, lock, release, err := lockedScope("update", o.project, "install skills first (skillport install SOURCE)")
	if err != nil {
		return err
	}
	defer release()
	for _, n := range names {
		if !slices.ContainsFunc(lock.Skills, func(s install.Skill) bool { return s.Name == n }) {
			return usageErrorf("update: %s is not in %s; see skillport check", esc(n), esc(lockPath))
		}
	}
	chosen := &install.Lock{}
	for _, s := range lock.Skills {
		if len(names) == 0 || slices.Contains(names, s.Name) {
			chosen.Skills = append(chosen.Skills, s)
		}
	}
	sweepStaging(stderr, "update", stagingParents(o.project, lock))
	sources, err := lockSources(ctx, stderr, "update", chosen, o.timeout)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("update: %w", err)}
	}
	if len(sources) == 0 {
		fmt.Fprintf(stdout, "%s lists no skills\n", esc(lockPath))
		return nil
	}
	failed := 0
	fail := func(who, msg string) {
		failed++
		printError(stderr, "update: "+esc(who)+": ", msg)
	}
	todo, gone, ok, h, err := fetchSources(ctx, stderr, o, sources, true, &host.Options{Approver: approver, Approvals: store}, fail)
	if err != nil {
		return err
	}
	defer h.Close()
	if !ok {
		failed++
	}

	locked := lockIndex(lock)
	records := map[string]install.Skill{} // new records by source and path
	updated := 0
	for _, c := range lockChanges(todo, locked) {
		f := c.f
		key := f.rec.Source + "\x00" + f.rec.Path
		f.rec.Installed = locked[key].Installed
		printChanges(stdout, c)
		signerChange := install.SignerChange(locked[key], &f.rec)
		if install.TreeDigest(locked[key].Files) == f.rec.Digest {
			// Only the commit or document moved: the same content, which
			// the recorded signer signed, keeps its signer unless allowed.
			if signerChange != "" && !o.allowSignerChange {
				f.rec.Signer = locked[key].Signer
			}
			records[key] = f.rec
			continue
		}
		if msg := signerChange; msg != "" && !o.allowSignerChange {
			fail(f.rec.Path+" from "+f.src.given, msg+"; nothing of it was written")
			continue
		}
		if err := approveUpdate(ctx, h, f, yes, policy); err != nil {
			fail(f.rec.Path+" from "+f.src.given, err.Error())
			continue
		}
		placed := true
		for _, t := range f.rec.Installed {
			if _, err := placeSkill(t.Dir, f); err != nil {
				fail(f.rec.Path+" from "+f.src.given, err.Error())
				placed = false
				continue
			}
			fmt.Fprintf(stdout, "%s -> %s (%s verified)\n", esc(f.rec.Name), esc(t.Dir), count(len(f.rec.Files), "file", "files"))
		}
		if placed {
			records[key] = f.rec
			updated++
		}
	}

	removed := map[string][]install.Target{} // what is left of each skill gone
	for _, g := range gone {
		key := g.src.given + "\x00" + g.path
		s := locked[key]
		fmt.Fprintf(stdout, "%s: removed at the source\n", esc(g.who()))
		left, n := removeTargets(stdout, stderr, "update", s, o.force)
		failed += n
		removed[key] = left
	}

	var keep []install.Skill
	for _, s := range lock.Skills {
		key := s.Source + "\x00" + s.Path
		if left, ok := removed[key]; ok {
			if len(left) > 0 {
				s.Installed = left
				keep = append(keep, s)
			}
			continue
		}
		if r, ok := records[key]; ok {
			s = r
		}
		keep = append(keep, s)
	}
	lock.Skills = keep
	if err := install.Write(lockPath, lock); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("update: writing %s: %w", esc(lockPath), err)}
	}
	fmt.Fprintf(stdout, "%d updated, %d removed at the source, %d failed\n", updated, len(gone), failed)
	if failed > 0 {
		return errFailed
	}
	return nil
}

// approveUpdate asks for the new content of f the approval load asks for
// (host.Load: a remembered approval of exactly this content, the policy,
// --yes or the terminal), and closes the acting window it opens. A skill
// from a folder needs none, as for load.
func approveUpdate(ctx context.Context, h *host.Host, f *fetched, yes bool, policy string) error {
	if f.entry.Kind == host.KindFilesystem {
		return nil
	}
	l, err := h.Load(ctx, f.entry)
	if errors.Is(err, host.ErrNotApproved) && !yes && policy == "" && !isTerminal(os.Stdin) {
		return fmt.Errorf("%v; there is no terminal to ask on: pass --yes to approve this update, or --policy FILE; nothing of it was written", err)
	}
	if err != nil {
		return fmt.Errorf("%v; nothing of it was written", err)
	}
	l.Close()
	return nil
}

// removeTargets takes skill s out of every folder the lock records for it,
// each in one step; a folder that differs from the lock is left alone
// unless force. It returns the folders left and how many failed.
func removeTargets(stdout, stderr io.Writer, cmd string, s *install.Skill, force bool) (left []install.Target, failed int) {
	for _, t := range s.Installed {
		diffs, err := drift(s, t.Dir)
		if err == nil && len(diffs) == 1 && diffs[0] == "the folder is gone" {
			continue
		}
		if (err != nil || len(diffs) > 0) && !force {
			failed++
			left = append(left, t)
			fmt.Fprintf(stderr, "skillport: %s: %s: %s differs from %s (%d changes); left alone, pass --force to remove it anyway\n", cmd, esc(s.Name), esc(t.Dir), install.LockName, len(diffs))
			continue
		}
		if err := install.Remove(t.Dir); err != nil {
			failed++
			left = append(left, t)
			fmt.Fprintf(stderr, "skillport: %s: %s: %s\n", cmd, esc(s.Name), esc(err.Error()))
			continue
		}
		fmt.Fprintf(stdout, "%s: removed %s\n", esc(s.Name), esc(t.Dir))
	}
	return left, failed
}
