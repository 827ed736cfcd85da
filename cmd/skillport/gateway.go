package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/internal/stdio"
)

var gatewayCmd = &cobra.Command{
	Use:   "gateway --config FILE",
	Short: "Serve the skills of MCP servers and local folders to any MCP client, as tools",
	Long: `gateway aggregates the skills of the upstream MCP servers and local skill
folders listed in FILE (gateway.json) and serves them as one MCP server: the
tools read_skill, read_skill_file, list_skill_dir and search_skills, one
prompt per skill, the catalog in the server instructions, and the Skills
Extension itself with every upstream skill re-published as
skill://<origin>/<path>/SKILL.md. Every skill is approved (policy, or the
client through elicitation) and verified against its digests before any of
it reaches the model.

Add it to a client's MCP configuration:

  {"mcpServers": {"skills": {"command": "skillport", "args": ["gateway", "--config", "/path/to/gateway.json"]}}}

By default it speaks MCP on stdin/stdout. With --http it serves Streamable
HTTP at http://ADDR/mcp, on 127.0.0.1 unless ADDR names another host.
Logs go to stderr only.`,
	Args: cobra.NoArgs,
	RunE: runGateway,
}

func init() {
	f := gatewayCmd.Flags()
	f.String("config", "", "the gateway configuration `FILE` (gateway.json)")
	f.String("http", "", "serve Streamable HTTP on `ADDR` (host:port, :port or port) instead of stdio")
	f.Bool("stateless", false, "serve every protocol revision without sessions (approvals then come from the policy or multi round-trip input requests); without it, 2026-07-28 requests are stateless and older clients get sessions")
	httpFlags(f)
	authFlags(f)
	httpSessionFlags(gatewayCmd)
	gatewayTrust.register(gatewayCmd)
	rootCmd.AddCommand(hostCommand(gatewayCmd))
}

// gatewayTrust is the gateway's --trusted-key / --trust-policy.
var gatewayTrust trustFlag

func runGateway(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	file, _ := f.GetString("config")
	addr, _ := f.GetString("http")
	stateless, _ := f.GetBool("stateless")
	if file == "" {
		return usageErrorf("gateway: --config FILE is required (a gateway.json listing mcpServers and skillDirs)")
	}
	if stateless && addr == "" {
		return usageErrorf("gateway: --stateless applies to --http only")
	}
	var httpOpts *endpoint.Options
	if addr != "" {
		var err error
		if httpOpts, err = httpOptions(f, "gateway"); err != nil {
			return err
		}
	}
	hopts, err := sessionOptions(cmd, "gateway", addr, stateless, slog.Default())
	if err != nil {
		return err
	}
	authz, err := authOptions(cmd.Context(), f, "gateway", addr != "")
	if err != nil {
		return err
	}
	if err := gatewayTrust.load("gateway"); err != nil {
		return err
	}
	cfg, err := gateway.LoadConfig(file)
	if err != nil {
		return usageErrorf("%s", esc(err.Error()))
	}
	// Upstreams that require OAuth: their "auth" objects, or the tokens of
	// skillport auth login; a gateway never opens a browser.
	if err := attachOAuth("gateway", cfg.Origins, "", nil, cfg.Auth, os.Stderr); err != nil {
		return err
	}
	log := slog.Default()
	for _, n := range cfg.Notes {
		log.Info("gateway: " + n)
	}
	gopts := &gateway.Options{
		Implementation: &mcp.Implementation{Name: "skillport-gateway", Version: version()},
		Logger:         log,
		Trust:          gatewayTrust.hook(),
	}
	if authz != nil {
		// Each caller sees the skills the rules grant it, in every tool,
		// prompt and resource.
		gopts.Visible = authz.visible
	}
	g, err := gateway.Open(cfg, gopts)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	defer g.Close()

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g.Start(ctx)
	go func() {
		<-g.Ready()
		// Failures, diagnostics and servers without skills were logged
		// once, by the host, as they happened; here, one line per origin
		// that serves skills.
		for _, o := range g.Host().Origins() {
			if o.Err == nil {
				log.Info("gateway: origin ready", "label", o.Label, "where", o.Where, "skills", o.Skills)
			}
		}
	}()

	if addr == "" {
		err := g.Run(ctx, &stdio.Transport{In: os.Stdin, Out: os.Stdout})
		if err != nil && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			return &exitError{code: 1, err: fmt.Errorf("gateway: %w", err)}
		}
		return nil
	}
	ln, err := net.Listen("tcp", listenAddr(addr))
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("gateway: --http %s: %w", addr, err)}
	}
	fmt.Fprintf(os.Stderr, "gateway listening at %s (config %s)\n", listenURL(ln.Addr(), addr), esc(file))
	httpOpts.Ready = func(context.Context) error {
		select {
		case <-g.Ready():
			return nil
		default:
			return errors.New("the gateway is still discovering the skills of its upstream servers")
		}
	}
	h := g.Handler(hopts)
	defer h.Close()
	httpOpts.Sessions = h.Sessions
	httpOpts.Auth = authz.endpointAuth()
	return serveHTTP(ctx, ln, h, httpOpts, "gateway")
}
