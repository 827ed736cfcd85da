package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/internal/ocisource"
	"github.com/skillport/skillport/internal/regapi"
	"github.com/skillport/skillport/internal/registry"
)

// registryEnv names the registry when --registry is not given. Its value
// is read when a command runs, never made the flag's default: --help would
// print it, password included.
const registryEnv = "SKILLPORT_REGISTRY"

// registryFlag adds --registry, defaulting to $SKILLPORT_REGISTRY.
func registryFlag(f *pflag.FlagSet) {
	f.String("registry", "", "PostgreSQL registry `DSN` (postgres://...; default $"+registryEnv+"; a password is better in $PGPASSWORD or PGPASSFILE than here)")
	f.String("as", "", "who is publishing or changing, recorded with each change (default $SKILLPORT_PUBLISHER, else user@host)")
}

// registryConn connects to the registry, within connectTimeout: a
// database host that accepts the connection and then hangs fails the
// command instead of holding it.
func registryConn(cmd *cobra.Command, what string, connectTimeout time.Duration) (*pgx.Conn, error) {
	dsn, _ := cmd.Flags().GetString("registry")
	if dsn == "" {
		dsn = os.Getenv(registryEnv)
	}
	if dsn == "" {
		return nil, usageErrorf("%s: name the registry with --registry postgres://USER@HOST/DB (or set SKILLPORT_REGISTRY)", what)
	}
	if isHTTPURL(dsn) {
		return nil, usageErrorf("%s needs the database (--registry postgres://...); over HTTP a replica offers publish and registry versions, rollback, yank, approve, reject, review-mode and audit", what)
	}
	if !registry.IsDSN(dsn) {
		return nil, usageErrorf("%s: --registry %q: a registry is a postgres:// or postgresql:// URL", what, dsn)
	}
	ctx, cancel := context.WithTimeout(cmdContext(cmd), connectTimeout)
	defer cancel()
	conn, err := registry.Connect(ctx, dsn)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("registry: the database did not answer within %s; check that it is up", connectTimeout)
		}
		return nil, &exitError{code: 1, err: fmt.Errorf("%s: %w", what, err)}
	}
	return conn, nil
}

func who(cmd *cobra.Command) string {
	if as, _ := cmd.Flags().GetString("as"); as != "" {
		return as
	}
	if p := os.Getenv("SKILLPORT_PUBLISHER"); p != "" {
		return p
	}
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}

func init() {
	publishCmd := &cobra.Command{
		Use:   "publish [--registry DSN|URL | URL] [--prefix NS] SOURCE...",
		Short: "Publish directories, git or OCI sources of skills to a PostgreSQL registry as new versions",
		Long: `publish validates each SOURCE (a directory, git+URL[@REF][#SUBDIR], or
oci://REGISTRY/REPOSITORY[:TAG|@DIGEST] as push writes it) with the
same rules as serve, then stores each added or changed skill as a new immutable
version, in one transaction: all of it or nothing. File content is stored once
by SHA-256 digest; unchanged skills get no version. The publish owns the
namespace named by --prefix (the root namespace without it): skills of that
namespace missing from the source are removed, and no other namespace is
touched. Namespaces cannot overlap. The schema is created on an empty
database.

Several sources are published together, in the same transaction; give each
its namespace with PREFIX=SOURCE, as serve does (--prefix applies to a single
source). Sources with the same prefix publish that namespace together. A skill
path in two sources, or two prefixes of which one contains the other, is
refused naming both sources, and nothing is published. A git source records
its commit with its versions, an OCI source the digest its reference named, a
directory the HEAD of the git work tree it is in (or --commit, for every
source).

Publishers without the database's credentials publish through a replica that
accepts changes (skillport serve --accept-publish; docs/registry-governance.md):
name its URL, as signed in to with auth login, as the first argument or as
--registry. In CI, give the client credentials in $` + clientIDEnv + ` and
$` + clientSecretEnv + ` (or --client-id with --client-secret-env NAME); never a
secret in a flag. Over HTTP one source is published per command, and the
replica decides what you may publish from its rules. --sign-key and --keyless
sign here, as for a database; the bundles travel with the files, and the
replica refuses a bundle that does not match its skill.

  skillport auth login https://skills.example.com/mcp
  skillport publish https://skills.example.com/mcp --prefix acme/billing ./billing

Exit status: 0 when published (or nothing changed), 1 when refused (invalid
skills, colliding sources, a conflicting concurrent publish, overlapping
namespace, limits, a role you do not hold), 2 on usage errors.`,
		Args: cobra.ArbitraryArgs,
		RunE: runPublish,
	}
	f := publishCmd.Flags()
	registryFlag(f)
	f.String("prefix", "", "namespace to publish as: prefix every skill path with `NS` (e.g. acme/billing)")
	f.String("commit", "", "source control `COMMIT` the trees come from, recorded with each new version (default: a git source's commit, or HEAD when a directory is in a git work tree)")
	f.Bool("include-dotfiles", false, "publish files and directories whose names start with \".\"")
	f.Int64("max-bytes", registry.DefaultMaxPublishBytes, "refuse a publish storing more than `N` bytes of new content")
	f.String("sign-key", "", "sign every skill as the registry serves it with the PEM private key `FILE` (docs/signing.md); the bundle is stored with the version")
	keylessFlags(f)
	scannerFlags(f)
	apiAuthFlags(f)
	f.Bool("plain-http", false, "talk HTTP, not HTTPS, to oci:// registries that are not on loopback")
	rootCmd.AddCommand(publishCmd)

	regCmd := &cobra.Command{
		Use:   "registry",
		Short: "Manage a PostgreSQL skills registry: migrate, ls, versions, diff, rollback, yank, log, approve, reject, review-mode, audit",
	}
	registryFlag(regCmd.PersistentFlags())
	apiAuthFlags(regCmd.PersistentFlags())
	regCmd.PersistentFlags().Duration("timeout", time.Minute, "fail when the database has not answered within `D` (a hung database fails the command instead of holding it)")
	regCmd.AddCommand(
		&cobra.Command{Use: "migrate", Short: "Create or upgrade the registry schema", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return withRegistry(cmd, "registry migrate", func(ctx context.Context, conn *pgx.Conn) error {
					applied, err := registry.Migrate(ctx, conn)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "schema at version %d (applied %v)\n", registry.SchemaVersion(), applied)
					return nil
				})
			}},
		&cobra.Command{Use: "versions SKILL", Short: "List a skill's versions: who published, when, digest, size", Args: exactArgs(1, "registry versions SKILL, e.g. acme/billing/refunds"),
			RunE: func(cmd *cobra.Command, args []string) error {
				print := func(vs []registry.Version) error {
					if asJSON(cmd) {
						return writeJSON(cmd.OutOrStdout(), versionsJSON(vs))
					}
					return printVersionsTable(cmd, vs)
				}
				return withEither(cmd, "registry versions", func(ctx context.Context, conn *pgx.Conn) error {
					vs, err := registry.Versions(ctx, conn, args[0])
					if err != nil {
						return err
					}
					return print(vs)
				}, func(ctx context.Context, c *regapi.Client) error {
					vs, err := c.Versions(ctx, args[0])
					if err != nil {
						return err
					}
					return print(vs)
				})
			}},
		&cobra.Command{Use: "diff SKILL FROM TO", Short: "Show the files added, removed and changed between two versions", Args: exactArgs(3, "registry diff SKILL FROM TO, e.g. acme/pdf 1 2"),
			RunE: func(cmd *cobra.Command, args []string) error {
				a, b := versionArg(args[1]), versionArg(args[2])
				if a < 1 || b < 1 {
					return usageErrorf("registry diff: versions are positive numbers (see registry versions %s)", args[0])
				}
				return withRegistry(cmd, "registry diff", func(ctx context.Context, conn *pgx.Conn) error {
					d, err := registry.Diff(ctx, conn, args[0], a, b)
					if err != nil {
						return err
					}
					return printDiff(ctx, cmd, conn, args[0], a, b, d)
				})
			}},
		&cobra.Command{Use: "rollback SKILL VERSION", Short: "Serve an earlier version of a skill again (recorded)", Args: exactArgs(2, "registry rollback SKILL VERSION"),
			RunE: func(cmd *cobra.Command, args []string) error {
				v := versionArg(args[1])
				if v < 1 {
					return usageErrorf("registry rollback: VERSION is a positive number (see registry versions %s)", args[0])
				}
				return withEither(cmd, "registry rollback", func(ctx context.Context, conn *pgx.Conn) error {
					if err := registry.Rollback(ctx, conn, args[0], v, who(cmd)); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s now serves version %d\n", args[0], v)
					return nil
				}, func(ctx context.Context, c *regapi.Client) error {
					if _, err := c.Change(ctx, "rollback", regapi.Change{Skill: args[0], Version: v}); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s now serves version %d\n", args[0], v)
					return nil
				})
			}},
		yankCmd(),
		&cobra.Command{Use: "log [SKILL]", Short: "Show the recorded changes of a skill, or of the registry", Args: cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				path := ""
				if len(args) == 1 {
					path = args[0]
				}
				return withRegistry(cmd, "registry log", func(ctx context.Context, conn *pgx.Conn) error {
					evs, err := registry.Events(ctx, conn, path, 1000)
					if err != nil {
						return err
					}
					if asJSON(cmd) {
						return writeJSON(cmd.OutOrStdout(), eventsJSON(evs))
					}
					for _, e := range evs {
						action := e.Action
						if e.Outcome == "refused" {
							action = "refused " + action
						}
						fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s %s v%d %s\n", e.At.UTC().Format(time.RFC3339), esc(e.Who), action, e.Path, e.Version, esc(oneLineText(e.Detail)))
					}
					return nil
				})
			}},
	)
	regCmd.AddCommand(registryLsCmd(), rescanCmd(), scanPolicyCmd())
	regCmd.AddCommand(governCmds()...)
	addJSONFlags(regCmd, "versions", "log", "diff", "rescan", "scan-policy")
	rootCmd.AddCommand(regCmd)
}

func yankCmd() *cobra.Command {
	var reason string
	c := &cobra.Command{Use: "yank SKILL VERSION", Short: "Withdraw a version for good; the skill falls back to its previous version, else its latest (recorded)", Args: exactArgs(2, "registry yank SKILL VERSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := versionArg(args[1])
			if v < 1 {
				return usageErrorf("registry yank: VERSION is a positive number (see registry versions %s)", args[0])
			}
			return withEither(cmd, "registry yank", func(ctx context.Context, conn *pgx.Conn) error {
				if err := registry.Yank(ctx, conn, args[0], v, who(cmd), reason); err != nil {
					return err
				}
				return printYanked(ctx, cmd, conn, args[0], v)
			}, func(ctx context.Context, c *regapi.Client) error {
				vs, err := c.Change(ctx, "yank", regapi.Change{Skill: args[0], Version: v, Reason: reason})
				if err != nil {
					return err
				}
				cur := 0
				for _, x := range vs {
					if x.Current {
						cur = x.Version
					}
				}
				printYankedAt(cmd, args[0], v, cur)
				return nil
			})
		}}
	c.Flags().StringVar(&reason, "reason", "", "why, recorded with the yank")
	return c
}

func exactArgs(n int, usage string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("usage: skillport %s", usage)
		}
		return nil
	}
}

func versionArg(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return v
}

func withRegistry(cmd *cobra.Command, what string, fn func(context.Context, *pgx.Conn) error) error {
	timeout, _ := cmd.Flags().GetDuration("timeout")
	if timeout <= 0 {
		return usageErrorf("%s: --timeout must be positive", what)
	}
	conn, err := registryConn(cmd, what, timeout)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(cmdContext(cmd)))
	ctx, cancel := context.WithTimeout(cmdContext(cmd), timeout)
	defer cancel()
	if err := fn(ctx, conn); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("registry: the database did not answer within %s (--timeout); check that it is up, or allow longer", timeout)
		}
		return &exitError{code: 1, err: fmt.Errorf("%s: %w", what, err)}
	}
	return nil
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

func runPublish(cmd *cobra.Command, args []string) error {
	f := cmd.Flags()
	prefix, _ := f.GetString("prefix")
	commit, _ := f.GetString("commit")
	dotfiles, _ := f.GetBool("include-dotfiles")
	maxBytes, _ := f.GetInt64("max-bytes")
	// A server's URL, first or as --registry, publishes over HTTP.
	server := ""
	if len(args) > 0 && isHTTPURL(args[0]) {
		server, args = args[0], args[1:]
		if t, _ := f.GetString("registry"); t != "" {
			return usageErrorf("publish: name the registry once: %s or --registry %s", server, t)
		}
	} else if t := registryTarget(cmd); isHTTPURL(t) {
		server = t
	}
	if server != "" {
		switch {
		case len(args) != 1:
			return usageErrorf("publish: over HTTP, publish one source per command (give each namespace its own publish), e.g. skillport publish %s --prefix acme ./skills", server)
		case f.Changed("max-bytes"):
			return usageErrorf("publish: --max-bytes applies to a database; the replica bounds what it accepts")
		}
		p, src := splitPrefix(args[0])
		if p == "" {
			p = prefix
		}
		return runPublishHTTP(cmd, server, p, src, commit, dotfiles)
	}
	plainHTTP, _ := f.GetBool("plain-http")
	if len(args) == 0 {
		return usageErrorf("publish: name a source of skills (a directory, git+URL[@REF][#SUBDIR] or oci://REGISTRY/REPOSITORY[:TAG]), e.g. skillport publish --registry postgres://... --prefix acme ./skills")
	}
	if prefix != "" && len(args) > 1 {
		return usageErrorf("publish: --prefix applies to one source; give each source its namespace with PREFIX=SOURCE")
	}
	if maxBytes <= 0 {
		return usageErrorf("publish: --max-bytes must be positive")
	}
	if apiAuth.clientID != "" || apiAuth.login {
		return usageErrorf("publish: --client-id and --login sign in to a server; name its URL (skillport publish https://... SOURCE)")
	}
	// Every argument is checked before anything is opened or fetched.
	type source struct {
		prefix, dir string
		spec        gitsource.Spec
		oci         *ocisource.Ref
	}
	var srcs []source
	for _, arg := range args {
		p, src := splitPrefix(arg)
		if p == "" {
			p = prefix
		}
		s := source{prefix: p}
		if gitsource.IsSpec(src) {
			sp, err := gitsource.ParseSpec(src)
			if err != nil {
				return usageErrorf("publish: %v", err)
			}
			s.spec = sp
		} else if ocisource.IsSpec(src) {
			ref, err := ocisource.ParseRef(src)
			if err != nil {
				return usageErrorf("publish: %v", err)
			}
			s.oci = &ref
		} else if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			return usageErrorf("publish: %s: not a directory", esc(src))
		} else {
			s.dir = src
		}
		srcs = append(srcs, s)
	}
	// Only connecting has a deadline: a publish of a large tree takes as
	// long as it takes.
	conn, err := registryConn(cmd, "publish", registry.DefaultQueryTimeout)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(cmd.Context()))
	parts := make([]registry.Part, len(srcs))
	for i, s := range srcs {
		// The catalog would log each invalid skill, which the publish then
		// refuses listing every one: printed once, in the error.
		copts := &catalog.Options{Prefix: s.prefix, IncludeDotFiles: dotfiles, Logger: slog.New(slog.DiscardHandler)}
		switch {
		case s.oci != nil:
			// An OCI source publishes the artifacts it names, and records
			// their digest where a git source records its commit.
			src, err := ocisource.Open(cmd.Context(), *s.oci, &ocisource.Options{PlainHTTP: plainHTTP, CacheDir: ociCacheDir("")}, copts)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("publish: %w", err)}
			}
			parts[i] = registry.Part{Name: s.oci.String(), Catalog: src.Catalog(), Commit: src.Digest()}
		case s.spec.URL != "":
			// A git source publishes its commit's tree, and records the commit.
			g, err := gitsource.Open(cmd.Context(), s.spec, &gitsource.Options{Catalog: copts})
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("publish: %w", err)}
			}
			parts[i] = registry.Part{Name: s.spec.String(), Catalog: g.Catalog(), Commit: g.Status().Commit}
		default:
			cat, err := catalog.OpenDir(s.dir, copts)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("publish: %w", err)}
			}
			defer cat.Close()
			parts[i] = registry.Part{Name: s.dir, Catalog: cat, Commit: headCommit(s.dir)}
		}
		if commit != "" {
			parts[i].Commit = commit
		}
	}
	signer, err := chooseSigner(cmd, "publish", "sign-key", false)
	if err != nil {
		return err
	}
	if err := signParts(cmd.ErrOrStderr(), parts, signer); err != nil {
		return err
	}
	scans, err := scanOptions(cmd, "publish")
	if err != nil {
		return err
	}
	res, err := registry.PublishParts(cmd.Context(), conn, parts, &registry.PublishOptions{Publisher: who(cmd), MaxBytes: maxBytes, Scan: scans})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("publish: %w", err)}
	}
	for _, r := range res {
		printPublish(cmd.OutOrStdout(), r)
	}
	return nil
}

func printPublish(w io.Writer, res *registry.PublishResult) {
	ns := strconv.Quote(res.Namespace)
	if res.Namespace == "" {
		ns = "the root namespace"
	}
	fmt.Fprintf(w, "published %s: %d added, %d changed, %d removed, %d unchanged; %d new files (%s) stored\n",
		ns, len(res.Added), len(res.Changed), len(res.Removed), res.Unchanged, res.BlobsStored, size(res.BytesStored))
	for _, c := range res.Added {
		fmt.Fprintf(w, "  + %s v%d (%d files, %s)\n", c.Path, c.Version, c.Files, size(c.Size))
		printFindings(w, "      ", c.Findings)
	}
	for _, c := range res.Changed {
		fmt.Fprintf(w, "  ~ %s v%d (%d files, %s)\n", c.Path, c.Version, c.Files, size(c.Size))
		printFindings(w, "      ", c.Findings)
	}
	for _, c := range res.Removed {
		fmt.Fprintf(w, "  - %s (was v%d)\n", c.Path, c.Version)
	}
	if n := len(res.Added) + len(res.Changed); n > 0 {
		switch res.Review {
		case registry.ReviewEnforce:
			fmt.Fprintf(w, "  %d new versions pending review, not served until a reviewer approves them (skillport registry approve SKILL VERSION)\n", n)
		case registry.ReviewObserve:
			fmt.Fprintf(w, "  %d new versions served, pending review (observe mode)\n", n)
		}
	}
}

func size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// registrySummary prints the one-line account of what a replica serves.
func registrySummary(rs *registry.Source, where string) {
	snap := rs.Snapshot()
	var n int64
	for _, f := range snap.Files() {
		n += f.Size
	}
	fmt.Fprintf(os.Stderr, "serving %s (%s, %s) of registry generation %d at %s\n", count(len(snap.Skills()), "skill", "skills"), count(len(snap.Files()), "file", "files"), humanSize(n), rs.Generation(), where)
}

// registryMetrics adds the replica's metrics to those of the endpoint.
func registryMetrics(o *endpoint.Options, rs *registry.Source, usage *registry.Usage) error {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cs := rs.Collectors()
	if usage != nil {
		cs = append(cs, usage.Collector())
	}
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	o.Registerer, o.Gatherer = r, r
	return nil
}

// headCommit returns the commit checked out in the git work tree holding
// dir, or "" when dir is not in one: a publish from a git checkout records
// where it came from without being told.
func headCommit(dir string) string {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return ""
	}
	head, err := repo.Head()
	if err != nil {
		return ""
	}
	return head.Hash().String()
}
