package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/internal/mcphttp"
	"github.com/skillport/skillport/internal/oauth"
	"github.com/skillport/skillport/internal/regapi"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/internal/signature"
	"github.com/skillport/skillport/skillserver"
)

// A governed registry (docs/registry-governance.md) is reached either
// through its database (postgres://, operators) or through a replica that
// accepts changes over HTTP (https://, everyone else, with OAuth tokens).

// Environment variables of a machine's client credentials (CI): the
// secret never travels in a flag.
const (
	clientIDEnv     = "SKILLPORT_CLIENT_ID"
	clientSecretEnv = "SKILLPORT_CLIENT_SECRET"
)

// isHTTPURL reports whether s names a server rather than a database.
func isHTTPURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// registryTarget is --registry, else $SKILLPORT_REGISTRY.
func registryTarget(cmd *cobra.Command) string {
	t, _ := cmd.Flags().GetString("registry")
	if t == "" {
		t = os.Getenv(registryEnv)
	}
	return t
}

// apiAuth holds the sign-in flags of the commands that reach a registry
// over HTTP.
var apiAuth clientAuth

func apiAuthFlags(f *pflag.FlagSet) {
	apiAuth.register(f, true)
}

// apiClient is the API client of the replica at server, with the tokens
// of auth login, or client credentials: --client-id with a secret from
// --client-secret-env/--client-secret-file, or $SKILLPORT_CLIENT_ID and
// $SKILLPORT_CLIENT_SECRET.
func apiClient(cmd *cobra.Command, name, server string) (*regapi.Client, error) {
	if as, _ := cmd.Flags().GetString("as"); as != "" {
		return nil, usageErrorf("%s: --as names who changes a database; over HTTP you are who your token says (see skillport auth status)", name)
	}
	if _, err := serverURL(name, server); err != nil {
		return nil, err
	}
	ca := apiAuth
	if ca.clientID == "" && os.Getenv(clientIDEnv) != "" {
		ca.clientID = os.Getenv(clientIDEnv)
		if ca.secretEnv == "" && ca.secretFile == "" && os.Getenv(clientSecretEnv) != "" {
			ca.secretEnv = clientSecretEnv
		}
	}
	store, err := tokenStore()
	if err != nil {
		return nil, &exitError{code: 1, err: fmt.Errorf("%s: %w", name, err)}
	}
	opts, err := ca.options(name, store, cmd.ErrOrStderr(), !ca.login)
	if err != nil {
		return nil, err
	}
	h, err := oauth.New(server, opts)
	if err != nil {
		return nil, usageErrorf("%s: %s: %v", name, server, err)
	}
	return &regapi.Client{
		Server: server,
		HTTP:   mcphttp.NewClient(0),
		Token: func(ctx context.Context) (string, error) {
			t, err := h.Token(ctx)
			if err != nil || t == nil {
				return "", err
			}
			return t.AccessToken, nil
		},
		Authorize: h.Authorize,
	}, nil
}

// withAPI runs fn with the API client of the replica the registry target
// names, within --timeout.
func withAPI(cmd *cobra.Command, what, server string, fn func(context.Context, *regapi.Client) error) error {
	timeout, _ := cmd.Flags().GetDuration("timeout")
	if timeout <= 0 {
		return usageErrorf("%s: --timeout must be positive", what)
	}
	c, err := apiClient(cmd, what, server)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmdContext(cmd), timeout)
	defer cancel()
	if err := fn(ctx, c); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%s did not answer within %s (--timeout)", server, timeout)
		}
		var lr *oauth.LoginRequiredError
		if errors.As(err, &lr) {
			err = lr
		}
		return &exitError{code: 1, err: fmt.Errorf("%s: %w", what, err)}
	}
	return nil
}

// withEither runs db with a database connection, or api with an API
// client, as the registry target says.
func withEither(cmd *cobra.Command, what string, db func(context.Context, *pgx.Conn) error, api func(context.Context, *regapi.Client) error) error {
	if t := registryTarget(cmd); isHTTPURL(t) {
		return withAPI(cmd, what, t, api)
	}
	return withRegistry(cmd, what, db)
}

// runPublishHTTP publishes one source through the replica at server.
func runPublishHTTP(cmd *cobra.Command, server, prefix, src, commit string, dotfiles bool) error {
	c, err := apiClient(cmd, "publish", server)
	if err != nil {
		return err
	}
	// Skills are named as the registry will serve them (under the
	// prefix): what a signature binds.
	copts := &catalog.Options{Prefix: prefix, IncludeDotFiles: dotfiles, Logger: slog.New(slog.DiscardHandler)}
	var cat *catalog.Catalog
	if gitsource.IsSpec(src) {
		sp, err := gitsource.ParseSpec(src)
		if err != nil {
			return usageErrorf("publish: %v", err)
		}
		g, err := gitsource.Open(cmd.Context(), sp, &gitsource.Options{Catalog: copts})
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("publish: %w", err)}
		}
		cat = g.Catalog()
		if commit == "" {
			commit = g.Status().Commit
		}
	} else {
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			return usageErrorf("publish: %s: not a directory", esc(src))
		}
		cat, err = catalog.OpenDir(src, copts)
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("publish: %w", err)}
		}
		defer cat.Close()
		if commit == "" {
			commit = headCommit(src)
		}
	}
	// The replica validates again; refusing here saves the upload.
	if err := registry.CheckPublishable(cat); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("publish: %s: %w", esc(src), err)}
	}
	// Signed here, as a publish into the database signs (the same
	// signers, the same rule for bundles committed in the source); the
	// bundles travel in the archive and the replica checks that each binds
	// to its skill.
	signer, err := chooseSigner(cmd, "publish", "sign-key", false)
	if err != nil {
		return err
	}
	if err := signParts(cmd.ErrOrStderr(), []registry.Part{{Name: src, Catalog: cat}}, signer); err != nil {
		return err
	}
	res, err := c.Publish(cmdContext(cmd), cat, prefix, commit, dotfiles)
	if err != nil {
		var lr *oauth.LoginRequiredError
		if errors.As(err, &lr) {
			err = lr
		}
		return &exitError{code: 1, err: fmt.Errorf("publish: %s: %w", server, err)}
	}
	printPublish(cmd.OutOrStdout(), res)
	return nil
}

// acceptPublish mounts the write API (package regapi) on a replica's
// endpoint, and records in the audit log when the roles in force changed.
func acceptPublish(ctx context.Context, ep *endpoint.Endpoint, dsn, rulesFile string, sa *serveAuth, maxBytes int64, scans *registry.ScanOptions, signers *signature.Policy, log *slog.Logger) (func(), error) {
	h, err := regapi.New(ctx, regapi.Options{DSN: dsn, Require: sa.auth.Require, MaxArchiveBytes: maxBytes, Scan: scans, RequireSigned: signers, Logger: log,
		Allowed: func(c *skillserver.Caller, role, ns string) bool { return sa.rules.Allowed(c, role, ns) }})
	if err != nil {
		return nil, err
	}
	ep.Handle(regapi.Prefix, h)
	if err := recordRoles(ctx, dsn, rulesFile); err != nil {
		h.Close()
		return nil, err
	}
	return h.Close, nil
}

// recordRoles records the rules file's digest when it differs from the
// last one recorded: every change of who may do what is in the audit log.
func recordRoles(ctx context.Context, dsn, rulesFile string) error {
	data, err := readSmallFile(rulesFile, access.MaxFileBytes)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	conn, err := registry.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	host, _ := os.Hostname()
	_, err = registry.RecordRoles(ctx, conn, "sha256:"+hex.EncodeToString(sum[:]), rulesFile, registry.Actor{Who: "replica@" + host})
	return err
}

// The governance subcommands of registry: approve, reject, review-mode,
// audit.
func governCmds() []*cobra.Command {
	var digest string
	approve := &cobra.Command{Use: "approve SKILL VERSION", Short: "Release a version pending review (bound to its digest; not by its publisher)", Args: exactArgs(2, "registry approve SKILL VERSION [--digest D]"),
		Long: `approve releases a version pending review. The approval names the version's
digest: --digest is the one you reviewed (skillport registry versions SKILL
shows it); without it, the digest the registry holds now is approved and
printed. An approval of other content than the version holds is refused, and
so is one by the version's publisher.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := versionArg(args[1])
			if v < 1 {
				return usageErrorf("registry approve: VERSION is a positive number (see registry versions %s)", args[0])
			}
			ch := regapi.Change{Skill: args[0], Version: v, Digest: digest}
			return withEither(cmd, "registry approve", func(ctx context.Context, conn *pgx.Conn) error {
				if ch.Digest == "" {
					d, err := versionDigest(registry.Versions(ctx, conn, ch.Skill))(v)
					if err != nil {
						return err
					}
					ch.Digest = d
				}
				if err := registry.Approve(ctx, conn, ch.Skill, v, ch.Digest, registry.Actor{Who: who(cmd)}); err != nil {
					return err
				}
				return printReviewed(cmd, ch, "approved")
			}, func(ctx context.Context, c *regapi.Client) error {
				if ch.Digest == "" {
					d, err := versionDigest(c.Versions(ctx, ch.Skill))(v)
					if err != nil {
						return err
					}
					ch.Digest = d
				}
				if _, err := c.Change(ctx, "approve", ch); err != nil {
					return err
				}
				return printReviewed(cmd, ch, "approved")
			})
		}}
	approve.Flags().StringVar(&digest, "digest", "", "the version `DIGEST` you reviewed (sha256:...); the approval is refused if the version holds other content")

	var reason string
	reject := &cobra.Command{Use: "reject SKILL VERSION --reason TEXT", Short: "Refuse a version pending review, saying why (never served; not by its publisher)", Args: exactArgs(2, "registry reject SKILL VERSION --reason TEXT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := versionArg(args[1])
			if v < 1 {
				return usageErrorf("registry reject: VERSION is a positive number (see registry versions %s)", args[0])
			}
			if strings.TrimSpace(reason) == "" {
				return usageErrorf("registry reject: say why with --reason TEXT; the publisher reads it")
			}
			ch := regapi.Change{Skill: args[0], Version: v, Reason: reason}
			return withEither(cmd, "registry reject", func(ctx context.Context, conn *pgx.Conn) error {
				if err := registry.Reject(ctx, conn, ch.Skill, v, reason, registry.Actor{Who: who(cmd)}); err != nil {
					return err
				}
				return printReviewed(cmd, ch, "rejected")
			}, func(ctx context.Context, c *regapi.Client) error {
				if _, err := c.Change(ctx, "reject", ch); err != nil {
					return err
				}
				return printReviewed(cmd, ch, "rejected")
			})
		}}
	reject.Flags().StringVar(&reason, "reason", "", "why the version is refused, recorded and shown to the publisher")

	mode := &cobra.Command{Use: "review-mode NAMESPACE off|observe|enforce", Short: "Turn review before release off, on for observation, or on (per namespace; admin)", Args: exactArgs(2, "registry review-mode NAMESPACE off|observe|enforce (\"\" is every namespace)"),
		Long: `review-mode sets the review mode of NAMESPACE and the namespaces under it
("" is every namespace; a longer prefix wins):

  off      a publish is served at once (the default)
  observe  a publish is served at once, pending review and flagged as such
  enforce  a publish is pending and not served until a reviewer approves it;
           turning it on stops serving the versions still pending there`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, m := args[0], args[1]
			if m != registry.ReviewOff && m != registry.ReviewObserve && m != registry.ReviewEnforce {
				return usageErrorf("registry review-mode: %q is not a mode; give off, observe or enforce", m)
			}
			done := func() error {
				fmt.Fprintf(cmd.OutOrStdout(), "review is %s in %s\n", m, nsLabel(ns))
				return nil
			}
			return withEither(cmd, "registry review-mode", func(ctx context.Context, conn *pgx.Conn) error {
				if err := registry.SetReviewMode(ctx, conn, ns, m, registry.Actor{Who: who(cmd)}); err != nil {
					return err
				}
				return done()
			}, func(ctx context.Context, c *regapi.Client) error {
				if err := c.SetReviewMode(ctx, ns, m); err != nil {
					return err
				}
				return done()
			})
		}}

	var since string
	audit := &cobra.Command{Use: "audit [--since T] [--json]", Short: "Export the audit log: every change and refused attempt, who, when, from where", Args: cobra.NoArgs,
		Long: `audit prints the registry's audit log, oldest first: every publish, removal,
approval, rejection, rollback, yank, review-mode and role change, and every
attempt the registry refused, with who, when, what and from where. --json
prints JSON lines (one object per line), for log pipelines. --since takes an
RFC 3339 time (2026-01-02T15:04:05Z) or a duration back from now (24h).
Over HTTP it needs the admin role on the root namespace.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := sinceArg(since)
			if err != nil {
				return err
			}
			jsonOut := asJSON(cmd)
			enc := json.NewEncoder(cmd.OutOrStdout())
			print := func(r registry.AuditRecord) error {
				if jsonOut {
					return enc.Encode(r)
				}
				where := r.Path
				if where == "" {
					where = nsLabel(r.Namespace)
				}
				if r.Version > 0 {
					where += fmt.Sprintf(" v%d", r.Version)
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s %s %s from %s %s\n", r.At.Format(time.RFC3339), esc(r.Who), r.Action, r.Outcome, esc(where), esc(r.From), esc(oneLineText(r.Detail)))
				return err
			}
			return withEither(cmd, "registry audit", func(ctx context.Context, conn *pgx.Conn) error {
				return registry.Audit(ctx, conn, from, print)
			}, func(ctx context.Context, c *regapi.Client) error {
				return c.Audit(ctx, from, print)
			})
		}}
	audit.Flags().StringVar(&since, "since", "", "only what was recorded at or after `T` (RFC 3339, or a duration such as 24h)")
	audit.Flags().Bool("json", false, "print JSON lines for programs")
	return []*cobra.Command{approve, reject, mode, audit}
}

// versionDigest picks version v's digest out of a versions answer.
func versionDigest(vs []registry.Version, err error) func(int) (string, error) {
	return func(v int) (string, error) {
		if err != nil {
			return "", err
		}
		for _, x := range vs {
			if x.Version == v {
				return x.Digest, nil
			}
		}
		return "", fmt.Errorf("version %d: %w", v, registry.ErrUnknown)
	}
}

func printReviewed(cmd *cobra.Command, ch regapi.Change, what string) error {
	if ch.Digest != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "%s version %d %s (%s)\n", ch.Skill, ch.Version, what, ch.Digest)
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "%s version %d %s\n", ch.Skill, ch.Version, what)
	}
	return nil
}

func nsLabel(ns string) string {
	if ns == "" {
		return "every namespace"
	}
	return "namespace " + ns
}

func oneLineText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// sinceArg reads --since: an RFC 3339 time or a duration back from now.
func sinceArg(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, usageErrorf("registry audit: --since %q: give an RFC 3339 time (2026-01-02T15:04:05Z) or a duration (24h)", s)
}

// printVersionsTable prints registry versions as a table, review state
// included.
func printVersionsTable(cmd *cobra.Command, vs []registry.Version) error {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VERSION\tSTATE\tPUBLISHED\tBY\tFILES\tSIZE\tFINDINGS\tCOMMIT\tDIGEST")
	for _, v := range vs {
		var state []string
		switch {
		case v.YankedBy != "":
			state = append(state, "yanked by "+v.YankedBy)
		case v.Current:
			state = append(state, "current")
		}
		switch v.Review {
		case registry.StatePending:
			state = append(state, "pending review")
		case registry.StateApproved:
			state = append(state, "approved by "+v.ReviewedBy)
		case registry.StateRejected:
			state = append(state, "rejected by "+v.ReviewedBy+": "+oneLineText(v.ReviewReason))
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", v.Version, esc(strings.Join(state, ", ")), v.PublishedAt.UTC().Format(time.RFC3339), esc(v.PublishedBy), v.Files, size(v.Size), findingsSummary(v), esc(v.Commit), v.Digest)
	}
	return w.Flush()
}
