package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/regapi"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/internal/signature"
	"github.com/skillport/skillport/internal/stdio"
	"github.com/skillport/skillport/internal/web"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

// The compatibility profiles' share of serve, set by the init of
// serve_seed001.go and serve_sep2076.go; a build without a profile leaves
// its share nil (docs/profiles.md, "Removing a profile").
var (
	// scriptsProfile is the profile whose skills/execute --allow-scripts
	// enables; newScriptRunner sets up the sandbox its scripts run in.
	scriptsProfile  skillserver.Profile
	newScriptRunner func(log *slog.Logger, maxRuns int) (skillserver.ScriptRunner, error)
	// checkDependencies logs the skills' dependencies the server lacks.
	checkDependencies func(ctx context.Context, s *skillserver.Server, log *slog.Logger)
)

var serveCmd = &cobra.Command{
	Use:   "serve [flags] SOURCE...",
	Short: "Serve Agent Skills from directories or git repositories over MCP (stdio or Streamable HTTP)",
	Long: `serve publishes every skill under DIR over the MCP Skills Extension
(io.modelcontextprotocol/skills): skills/list, skills/get, resources/read and
resources/directory/read.

By default it speaks newline-delimited JSON-RPC on stdin/stdout, for an MCP
client's server configuration. With --http it serves Streamable HTTP at
http://ADDR/mcp, on 127.0.0.1 unless ADDR names another host (--http
0.0.0.0:8080 listens on every interface; :8080 on this machine only), and a web
catalog at http://ADDR/ with the discovery document at
/.well-known/agent-skills/index.json (--no-web turns both off). Logs go to
stderr only. The directory is watched and re-indexed when it changes
(--watch=false to serve a fixed snapshot).

A SOURCE is a directory or a git source git+URL[@REF][#SUBDIR] (https, http,
ssh, git or file URL; REF a branch, tag or full commit, default the remote's
default branch; SUBDIR the folder holding the skills), or an OCI source
oci://REGISTRY/REPOSITORY[:TAG|@DIGEST] written by skillport push (see
docs/oci.md). Several sources are
served as one catalog; PREFIX=SOURCE puts a source's skills under PREFIX, and
a skill path published by two sources is an error. Git branches and OCI tags
are re-resolved every --poll, git branches also on a signed push webhook (see
the README).`,
	Args: cobra.ArbitraryArgs,
	RunE: runServe,
}

func init() {
	f := serveCmd.Flags()
	f.String("http", "", "serve Streamable HTTP on `ADDR` (host:port, :port or port) instead of stdio")
	f.Bool("stateless", false, "serve every protocol revision without sessions (for replicas behind a load balancer); without it, 2026-07-28 requests are stateless and older clients get sessions")
	httpSessionFlags(serveCmd)
	f.String("prefix", "", "prefix every skill path with `P` (e.g. acme/tools)")
	f.Bool("watch", true, "re-index the directory when it changes and notify clients")
	f.Bool("include-dotfiles", false, "publish files and directories whose names start with \".\"")
	f.Int("page-size", 0, "items per page of skills/list, resources/list and directory reads (default 100)")
	f.String("profiles", "", "comma-separated wire designs to serve: sep2640, index (skill://index.json), sep2076, seed001 (default all; see the README, \"Compatibility profiles\")")
	f.Bool("allow-scripts", false, "answer seed-001 skills/execute by running skill scripts in a bubblewrap sandbox (refused if the sandbox cannot be set up)")
	f.Int("max-script-runs", 4, "with --allow-scripts, at most `N` scripts run at once; more are answered \"busy\" (with a control group, scripts' memory is bounded by N × 512 MiB)")
	f.Bool("strict", false, "refuse skills that break the Agent Skills rules hosts tolerate (non-string metadata, allowed-tools as a list, name differing from its folder) instead of publishing them with a warning")
	f.Bool("allow-hardlinks", false, "publish files with more than one hard link (by default their skill is refused: a hard link can bring in content from outside DIR)")
	f.Bool("no-web", false, "with --http, do not serve the web catalog at / nor /.well-known/agent-skills/index.json")
	f.Bool("legacy-error-codes", false, "answer seed-001 methods with its -32002/-32004 codes instead of -32602")
	f.Duration("usage-flush", registry.DefaultUsageFlush, "serving a registry over HTTP, add the loads counted to the database every `D` (and at shutdown)")
	f.Bool("accept-publish", false, "serving a registry over --http with --auth-issuer and --auth-rules, also accept publishes, rollbacks, yanks and reviews over HTTP from callers the rules grant roles (see docs/registry-governance.md)")
	f.Int64("publish-max-bytes", regapi.DefaultMaxArchiveBytes, "with --accept-publish, refuse a publish whose archive is larger than `N` bytes (413)")
	f.String("require-signed-publish", "", "with --accept-publish, refuse a publish unless each skill is signed by a signer the trust policy `FILE` names for the namespace's first segment, or \"*\" (docs/signing.md)")
	scannerFlags(f) // with --accept-publish: the built-in scanner always runs, --scanner adds external ones
	f.Duration("registry-timeout", registry.DefaultQueryTimeout, "serving a registry, fail a database read or reload that takes longer than `D` (a hung database fails reads instead of hanging them)")
	f.Bool("no-fast-path", false, "send resources/read, skills/get, skills/list and resources/directory/read through go-sdk too, instead of the thin read path that answers them with the same bytes several times cheaper")
	httpFlags(f)
	authFlags(f)
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
	maxRuns, _ := f.GetInt("max-script-runs")
	legacyCodes, _ := f.GetBool("legacy-error-codes")
	strict, _ := f.GetBool("strict")
	allowHardlinks, _ := f.GetBool("allow-hardlinks")
	noWeb, _ := f.GetBool("no-web")
	acceptPub, _ := f.GetBool("accept-publish")
	pubMax, _ := f.GetInt64("publish-max-bytes")
	pubScans, err := scanOptions(cmd, "serve")
	if err != nil {
		return err
	}
	switch {
	case len(args) == 0:
		return usageErrorf("serve: name the directory of skills to serve, e.g. skillport serve ./skills")
	case stateless && addr == "":
		return usageErrorf("serve: --stateless applies to --http only")
	}
	hopts, err := sessionOptions(cmd, "serve", addr, stateless, slog.Default())
	if err != nil {
		return err
	}
	switch {
	case pageSize < 0:
		return usageErrorf("serve: --page-size must be positive")
	case maxRuns < 1:
		return usageErrorf("serve: --max-script-runs %d: must be at least 1", maxRuns)
	}
	var httpOpts *endpoint.Options
	if addr != "" {
		var err error
		if httpOpts, err = httpOptions(f, "serve"); err != nil {
			return err
		}
	}
	authz, err := authOptions(cmd.Context(), f, "serve", addr != "")
	if err != nil {
		return err
	}
	if acceptPub {
		// Who may change what comes from the rules, checked on tokens:
		// without both there is no one to accept a change from.
		switch {
		case len(args) != 1 || !registry.IsDSN(args[0]):
			return usageErrorf("serve: --accept-publish applies to a registry: skillport serve --http ADDR --accept-publish --auth-issuer URL --auth-audience URI --auth-rules FILE postgres://...")
		case addr == "" || authz == nil || authz.rules == nil:
			return usageErrorf("serve: --accept-publish needs --http, --auth-issuer and --auth-rules (the rules grant the publish, review and admin roles)")
		case pubMax <= 0:
			return usageErrorf("serve: --publish-max-bytes must be positive")
		}
	}
	var pubSigners *signature.Policy
	if file, _ := f.GetString("require-signed-publish"); file != "" {
		if !acceptPub {
			return usageErrorf("serve: --require-signed-publish applies to --accept-publish")
		}
		if pubSigners, err = loadPolicy("serve", "--require-signed-publish", file); err != nil {
			return err
		}
	}
	var profiles []skillserver.Profile
	if profileList != "" {
		var err error
		if profiles, err = skillserver.ParseProfiles(profileList); err != nil {
			return usageErrorf("serve: --profiles: %v", err)
		}
	}
	if allowScripts && profiles != nil && !slices.Contains(profiles, scriptsProfile) {
		return usageErrorf("serve: --allow-scripts needs the seed001 profile, which defines skills/execute; add it to --profiles")
	}
	poll, _ := f.GetDuration("poll")
	cacheDir, _ := f.GetString("cache-dir")
	maxFetch, _ := f.GetInt64("git-max-fetch")
	if maxFetch <= 0 {
		return usageErrorf("serve: --git-max-fetch must be a positive number of bytes (the default is 1073741824, 1 GiB)")
	}
	plainHTTP, _ := f.GetBool("plain-http")
	secretFile, _ := f.GetString("webhook-secret-file")

	log := slog.Default()
	octx := cmd.Context()
	if octx == nil {
		octx = context.Background()
	}
	var (
		set       *sourceSet // directories and git sources
		src       published.Source
		summarize func(where string)
		hook      *httpRoute
		usage     *registry.Usage
		regInfo   *registry.Source
	)
	if slices.ContainsFunc(args, registry.IsDSN) {
		// A registry is served alone: its namespaces are already one catalog.
		switch {
		case len(args) > 1:
			return usageErrorf("serve: a registry (postgres://...) is served alone; publish the other sources into it with skillport publish")
		case prefix != "" || dotfiles:
			return usageErrorf("serve: --prefix and --include-dotfiles apply to directories; a registry serves its namespaces as published")
		}
		qt, _ := f.GetDuration("registry-timeout")
		if qt <= 0 {
			return usageErrorf("serve: --registry-timeout must be positive")
		}
		rs, err := registry.Open(octx, args[0], &registry.Options{Logger: log, QueryTimeout: qt})
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
		}
		defer rs.Close()
		src, summarize = rs, func(where string) { registrySummary(rs, where) }
		if httpOpts != nil {
			// Loads are counted over HTTP, where callers are known
			// (docs/registry-scanning.md).
			flush, _ := f.GetDuration("usage-flush")
			if flush <= 0 {
				return usageErrorf("serve: --usage-flush must be positive")
			}
			usage = rs.Usage(&registry.UsageOptions{Logger: log, FlushEvery: flush})
			regInfo = rs
			if err := registryMetrics(httpOpts, rs, usage); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
			}
		}
	} else {
		var err error
		endBuildGC := buildGC(buildHeapCeiling, buildGCPercent) // collect rarely while the first catalogs are built
		set, err = openSources(octx, args, sourceOptions{prefix: prefix, dotfiles: dotfiles, strict: strict, allowHardlinks: allowHardlinks, cacheDir: cacheDir, maxFetch: maxFetch, plainHTTP: plainHTTP, log: log})
		endBuildGC()
		if err != nil {
			return err
		}
		// The build's garbage (every file's walk record, the parsed YAML) is
		// gone once the snapshot exists: give it back to the system now
		// rather than keeping it resident while serving.
		debug.FreeOSMemory()
		src, summarize = set.source, set.summary
		if hook, err = set.webhook(secretFile, log); err != nil {
			return err
		}
	}
	if set != nil {
		serveMemoryLimit() // after the build's garbage was given back
	}
	served := authz.source(src) // what each caller may see, when --auth-rules is set
	opts := &skillserver.Options{PageSize: pageSize, Logger: log, Profiles: profiles, LegacyErrorCodes: legacyCodes}
	opts.NoFastPath, _ = f.GetBool("no-fast-path")
	if usage != nil {
		// The server says which skill each answer loaded, on every path
		// it answers by: nothing re-reads the request to count it.
		opts.OnSkillLoaded = usage.Loaded
	}
	if authz != nil {
		// Answers depend on who asks: no shared cache may keep them.
		opts.CacheScope = wire.CacheScopePrivate
	}
	if allowScripts {
		if newScriptRunner == nil {
			return usageErrorf("serve: --allow-scripts: this skillport is built without the seed001 profile, which runs scripts; leave the flag out")
		}
		runner, err := newScriptRunner(log, maxRuns)
		if err != nil {
			// Never fall back to running scripts unsandboxed.
			return &exitError{code: 1, err: fmt.Errorf("serve: --allow-scripts: %w", err)}
		}
		opts.Scripts = runner
	}
	if key := os.Getenv("SKILLPORT_CURSOR_KEY"); key != "" {
		opts.CursorKey = []byte(key)
	}
	s, skills, err := skillserver.New(&mcp.Implementation{Name: "skillport", Version: version()}, served, opts)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
	}
	if checkDependencies != nil {
		checkDependencies(cmd.Context(), skills, log)
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if set != nil {
		serveReleaser().follow(ctx, set.source)
		set.follow(ctx, watch, poll, log)
	}

	if addr == "" {
		summarize("stdio")
		err := s.Run(ctx, skills.Transport(&stdio.Transport{In: os.Stdin, Out: os.Stdout}))
		if err != nil && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
		}
		return nil
	}

	ln, err := net.Listen("tcp", listenAddr(addr))
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("serve: --http %s: %w", addr, err)}
	}
	summarize(listenURL(ln.Addr(), addr))
	var routes []httpRoute
	if hook != nil {
		routes = append(routes, *hook)
	}
	// /metrics counts what an anonymous caller sees (see docs/visibility.md).
	httpOpts.Source = served
	httpOpts.Auth = authz.endpointAuth()
	h := skills.HTTPHandler(hopts)
	defer h.Close()
	httpOpts.Sessions = h.Sessions
	if usage != nil {
		uctx, stopUsage := context.WithCancel(context.WithoutCancel(ctx))
		flushed := make(chan struct{})
		go func() { defer close(flushed); usage.Run(uctx) }()
		// The last counts are flushed before the database is let go.
		defer func() { stopUsage(); <-flushed }()
	}
	closeAPI := func() {}
	defer func() { closeAPI() }()
	err = serveHTTPWith(ctx, ln, h, httpOpts, "serve", func(ep *endpoint.Endpoint) error {
		for _, r := range routes {
			ep.Handle(r.path, r.h)
		}
		if acceptPub {
			rulesFile, _ := f.GetString("auth-rules")
			var err error
			if closeAPI, err = acceptPublish(ctx, ep, args[0], rulesFile, authz, pubMax, pubScans, pubSigners, log); err != nil {
				return err
			}
		}
		if noWeb {
			return nil
		}
		var reg web.Registry
		if regInfo != nil {
			reg = registryWeb{regInfo}
		}
		return mountWebVisible(ep, src, log, authz, reg)
	})
	if err == nil {
		log.Info("shut down")
	}
	return err
}

// listenURL is what the start line shows for a listener: a URL to open.
// A wildcard address ([::], 0.0.0.0) is no address to connect to: the
// machine's host name stands for it, with a note. A loopback address
// bound because the flag named no host (":8080", "8080") says how to
// listen on every interface.
func listenURL(a net.Addr, flag string) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String() + "/mcp"
	}
	port := strconv.Itoa(ta.Port)
	switch {
	case ta.IP.IsUnspecified():
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "127.0.0.1"
		}
		return "http://" + net.JoinHostPort(h, port) + "/mcp (listening on all interfaces)"
	case ta.IP.IsLoopback() && flagHost(flag) == "":
		return "http://" + net.JoinHostPort(ta.IP.String(), port) + "/mcp (this machine only; --http 0.0.0.0:" + port + " listens on all interfaces)"
	}
	return "http://" + net.JoinHostPort(ta.IP.String(), port) + "/mcp"
}

// flagHost is the host an --http value names, "" for ":8080" or "8080".
func flagHost(flag string) string {
	h, _, err := net.SplitHostPort(flag)
	if err != nil {
		return ""
	}
	return h
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
