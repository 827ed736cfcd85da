package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/endpoint"
	"github.com/skillport/skillport/registry"
	"github.com/skillport/skillport/sandbox"
	"github.com/skillport/skillport/server"
)

var serveCmd = &cobra.Command{
	Use:   "serve [flags] DIR|postgres://...",
	Short: "Serve a directory of Agent Skills over MCP (stdio or Streamable HTTP)",
	Long: `serve publishes every skill under DIR over the MCP Skills Extension
(io.modelcontextprotocol/skills): skills/list, skills/get, resources/read and
resources/directory/read.

By default it speaks newline-delimited JSON-RPC on stdin/stdout, for an MCP
client's server configuration. With --http it serves Streamable HTTP at
http://ADDR/mcp, on 127.0.0.1 unless ADDR names another host. Logs go to
stderr only. The directory is watched and re-indexed when it changes
(--watch=false to serve a fixed snapshot).

serve postgres://USER@HOST/DB serves a skills registry (see skillport publish)
instead: the registry's current versions, kept current through LISTEN/NOTIFY.
Run any number of such replicas with --stateless behind a load balancer,
sharing SKILLPORT_CURSOR_KEY.`,
	Args: cobra.ArbitraryArgs,
	RunE: runServe,
}

func init() {
	f := serveCmd.Flags()
	f.String("http", "", "serve Streamable HTTP on `ADDR` (host:port, :port or port) instead of stdio")
	f.Bool("stateless", false, "stateless Streamable HTTP (no sessions; for replicas behind a load balancer; enables protocol 2026-07-28)")
	f.String("prefix", "", "prefix every skill path with `P` (e.g. acme/tools)")
	f.Bool("watch", true, "re-index the directory when it changes and notify clients")
	f.Bool("include-dotfiles", false, "publish files and directories whose names start with \".\"")
	f.Int("page-size", 0, "items per page of skills/list, resources/list and directory reads (default 100)")
	f.String("profiles", "", "comma-separated wire designs to serve: sep2640, index (skill://index.json), sep2076, seed001 (default all; see the README, \"Compatibility profiles\")")
	f.Bool("allow-scripts", false, "answer seed-001 skills/execute by running skill scripts in a bubblewrap sandbox (refused if the sandbox cannot be set up)")
	f.Bool("legacy-error-codes", false, "answer seed-001 methods with its -32002/-32004 codes instead of -32602")
	httpFlags(f)
	rootCmd.AddCommand(serveCmd)
}

func runServe(cmd *cobra.Command, args []string) error {
	f := cmd.Flags()
	addr, _ := f.GetString("http")
	stateless, _ := f.GetBool("stateless")
	prefix, _ := f.GetString("prefix")
	watch, _ := f.GetBool("watch")
	dotfiles, _ := f.GetBool("include-dotfiles")
	pageSize, _ := f.GetInt("page-size")
	profileList, _ := f.GetString("profiles")
	allowScripts, _ := f.GetBool("allow-scripts")
	legacyCodes, _ := f.GetBool("legacy-error-codes")
	switch {
	case len(args) == 0:
		return usageErrorf("serve: name the directory of skills to serve, e.g. skillport serve ./skills")
	case len(args) > 1:
		return usageErrorf("serve: one directory at a time (got %d); put the skill trees under one directory, or run one server each", len(args))
	case stateless && addr == "":
		return usageErrorf("serve: --stateless applies to --http only")
	case pageSize < 0:
		return usageErrorf("serve: --page-size must be positive")
	}
	var httpOpts *endpoint.Options
	if addr != "" {
		var err error
		if httpOpts, err = httpOptions(f, "serve"); err != nil {
			return err
		}
	}
	var profiles []server.Profile
	if profileList != "" {
		var err error
		if profiles, err = server.ParseProfiles(profileList); err != nil {
			return usageErrorf("serve: --profiles: %v", err)
		}
	}
	if allowScripts && profiles != nil && !slices.Contains(profiles, server.ProfileSeed001) {
		return usageErrorf("serve: --allow-scripts needs the seed001 profile, which defines skills/execute; add it to --profiles")
	}
	dir := args[0]
	if registry.IsDSN(dir) {
		if prefix != "" || dotfiles {
			return usageErrorf("serve: --prefix and --include-dotfiles apply to directories; a registry serves its namespaces as published")
		}
	} else if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return usageErrorf("serve: %s: %v", dir, err)
	}

	log := slog.Default()
	var (
		src      server.Source
		describe func(where string)
		watchDir func(context.Context) error
	)
	if registry.IsDSN(dir) {
		rs, err := registry.Open(cmd.Context(), dir, &registry.Options{Logger: log})
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
		}
		defer rs.Close()
		src, describe = rs, func(where string) { registrySummary(rs, where) }
		if httpOpts != nil {
			if err := registryMetrics(httpOpts, rs); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
			}
		}
	} else {
		cat, err := catalog.OpenDir(dir, &catalog.Options{Prefix: prefix, IncludeDotFiles: dotfiles, Logger: log})
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
		}
		cs := server.NewCatalogSource(cat)
		src, describe = cs, func(where string) { summary(cat, dir, where) }
		watchDir = func(ctx context.Context) error { return cs.Watch(ctx, nil) }
	}
	opts := &server.Options{PageSize: pageSize, Logger: log, Profiles: profiles, LegacyErrorCodes: legacyCodes}
	if allowScripts {
		runner, err := sandbox.New(&sandbox.Options{Logger: log})
		if err != nil {
			// Never fall back to running scripts unsandboxed.
			return &exitError{code: 1, err: fmt.Errorf("serve: --allow-scripts: %w", err)}
		}
		opts.Scripts = runner
	}
	if key := os.Getenv("SKILLPORT_CURSOR_KEY"); key != "" {
		opts.CursorKey = []byte(key)
	}
	s, skills, err := server.New(&mcp.Implementation{Name: "skillport", Version: version()}, src, opts)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
	}
	// skillport serve registers no tools or prompts: every SEP-2076
	// dependency on one is logged, so that the operator knows.
	if _, err := skills.CheckDependencies(cmd.Context()); err != nil {
		log.Warn("cannot check skill dependencies", "err", err)
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if watch && watchDir != nil {
		go func() {
			if err := watchDir(ctx); err != nil {
				log.Warn("live reload is off", "err", err)
			}
		}()
	}

	if addr == "" {
		describe("stdio")
		err := s.Run(ctx, skills.Transport(&mcp.StdioTransport{}))
		if err != nil && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
		}
		return nil
	}

	ln, err := net.Listen("tcp", listenAddr(addr))
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("serve: --http %s: %w", addr, err)}
	}
	describe("http://" + ln.Addr().String() + "/mcp")
	httpOpts.Source = src
	err = serveHTTP(ctx, ln, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: stateless, Logger: log}), httpOpts, "serve")
	if err == nil {
		log.Info("shut down")
	}
	return err
}

// listenAddr binds to loopback unless the address names a host.
func listenAddr(addr string) string {
	if _, err := net.LookupPort("tcp", addr); err == nil && !containsColon(addr) {
		return net.JoinHostPort("127.0.0.1", addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func containsColon(s string) bool {
	for i := range len(s) {
		if s[i] == ':' {
			return true
		}
	}
	return false
}

// summary prints the one-line account of what is served to stderr.
func summary(cat *catalog.Catalog, dir, where string) {
	st := cat.Stats()
	noun := "skills"
	if st.Skills == 1 {
		noun = "skill"
	}
	msg := fmt.Sprintf("serving %d %s (%d files, %.1f MiB) from %s at %s", st.Skills, noun, st.Files, float64(st.Bytes)/(1<<20), dir, where)
	if st.Invalid > 0 {
		msg += fmt.Sprintf("; %d skills skipped (see above)", st.Invalid)
	}
	fmt.Fprintln(os.Stderr, msg)
}

func version() string { return "dev" }
