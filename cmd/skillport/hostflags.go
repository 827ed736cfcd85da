package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/host/cache"
	"github.com/skillport/skillport/wire"
)

// hostFlags are the flags shared by the commands that consume MCP-served
// skills (ls, verify, pull, load).
type hostFlags struct {
	config       string
	label        string
	headers      []string
	timeout      time.Duration
	skillDirs    []string
	noLocal      bool
	allowDynamic bool
	only         []string // pull --skill: skill paths to keep
}

func (f *hostFlags) register(cmd *cobra.Command, withLocal bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "an mcpServers JSON configuration (Claude Desktop, Cursor, VS Code or skillport format)")
	fl.StringVar(&f.label, "label", "server", "host label for the server given on the command line")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, `HTTP header for the server URL, "Name: value" (repeatable)`)
	fl.DurationVar(&f.timeout, "timeout", host.DefaultCallTimeout, "timeout of each call to a server")
	fl.BoolVar(&f.allowDynamic, "allow-dynamic", false, `accept skills whose resources are "dynamic" (unverifiable)`)
	if withLocal {
		fl.StringArrayVar(&f.skillDirs, "skills-dir", nil, "a local skill folder to include, LABEL=PATH or PATH (repeatable)")
		fl.BoolVar(&f.noLocal, "no-local", false, "with --config, do not include ~/.claude/skills, .claude/skills and .agents/skills")
	}
}

// serverArgs is the usage text for the positional server.
const serverArgs = "[URL | -- COMMAND [ARGS...]]"

// origins builds the origin list: the server named on the command line
// (a URL as the last argument, or a command after --), the configuration
// file's servers and folders, and local skill folders.
func (f *hostFlags) origins(cmd *cobra.Command, args []string, stderr io.Writer) ([]host.Origin, error) {
	name := cmd.Name()
	var out []host.Origin
	dash := cmd.ArgsLenAtDash()
	var positional []string
	switch {
	case dash >= 0:
		if dash > 0 {
			return nil, usageErrorf("%s: unexpected argument %q before --", name, args[0])
		}
		if len(args) == 0 {
			return nil, usageErrorf("%s: name the server command after --, e.g. skillport %s -- node server.mjs", name, name)
		}
		if err := host.ValidLabel(f.label); err != nil {
			return nil, usageErrorf("%s: --label: %v", name, err)
		}
		out = append(out, host.Origin{Label: f.label, Command: args[0], Args: args[1:]})
	case len(args) > 0:
		positional = args[:len(args)-1]
		u := args[len(args)-1]
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, usageErrorf("%s: %q is not an http(s) URL; give a server URL, or a command after --", name, u)
		}
		if err := host.ValidLabel(f.label); err != nil {
			return nil, usageErrorf("%s: --label: %v", name, err)
		}
		o := host.Origin{Label: f.label, URL: u}
		for _, h := range f.headers {
			k, v, ok := strings.Cut(h, ":")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, usageErrorf("%s: --header %q must look like \"Name: value\"", name, h)
			}
			if o.Headers == nil {
				o.Headers = map[string]string{}
			}
			o.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		if host.IsSiteURL(u) {
			// A plain web address: start from its discovery document.
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			mcpURL, err := host.DiscoverMCP(ctx, &http.Client{Timeout: f.timeout}, u, o.Headers)
			if err != nil {
				return nil, &exitError{code: 1, err: fmt.Errorf("%s: %w", name, err)}
			}
			fmt.Fprintf(stderr, "skillport: %s: MCP endpoint %s (from %s%s)\n", name, mcpURL, strings.TrimSuffix(u, "/"), wire.WellKnownPath)
			o.URL = mcpURL
		}
		out = append(out, o)
	}
	if len(positional) > 0 {
		return nil, usageErrorf("%s: unexpected arguments %q; the server URL comes last", name, positional)
	}
	if f.config != "" {
		cfg, notes, err := host.LoadConfig(f.config)
		if err != nil {
			return nil, usageErrorf("%s: %v", name, err)
		}
		for _, n := range notes {
			fmt.Fprintf(stderr, "skillport: %s: %s\n", f.config, n)
		}
		out = append(out, cfg...)
		if !f.noLocal {
			out = append(out, host.DefaultSkillDirs()...)
		}
	}
	for _, d := range f.skillDirs {
		label, path, ok := strings.Cut(d, "=")
		if !ok {
			label, path = "dir", d
		}
		out = append(out, host.Origin{Label: label, Dir: path, Display: path})
	}
	if len(out) == 0 {
		return nil, usageErrorf("%s: name a server: a URL, -- COMMAND ARGS, or --config FILE", name)
	}
	// A label may only be used once; the command line wins over defaults.
	seen := map[string]bool{}
	var uniq []host.Origin
	for _, o := range out {
		if seen[o.Label] {
			if o.Dir != "" && f.config != "" {
				continue // a default folder whose label the configuration already uses
			}
			return nil, usageErrorf("%s: the label %q is used twice; pick another with --label", name, o.Label)
		}
		seen[o.Label] = true
		uniq = append(uniq, o)
	}
	return uniq, nil
}

// newHost builds and connects a host.
func (f *hostFlags) newHost(ctx context.Context, origins []host.Origin, opts *host.Options) (*host.Host, error) {
	if opts == nil {
		opts = &host.Options{}
	}
	opts.CallTimeout = f.timeout
	opts.AllowDynamic = f.allowDynamic
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError + 1})) // diagnostics are printed by the commands
	if logLevel.Level() <= slog.LevelDebug {
		opts.Logger = slog.Default()
		opts.ServerStderr = os.Stderr
	}
	h, err := host.New(origins, opts)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if err := h.Connect(ctx); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// reportOrigins prints diagnostics and failed origins to stderr and
// reports whether every MCP origin was usable.
func reportOrigins(w io.Writer, h *host.Host) bool {
	for _, d := range h.Diagnostics() {
		fmt.Fprintf(w, "skillport: %s\n", sanitizeLine(d.String()))
	}
	ok := true
	for _, o := range h.Origins() {
		if o.Err != nil {
			ok = false
		}
	}
	return ok
}

func sanitizeLine(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// approvalSetup returns the approver and store for commands that load
// skills for a model: persisted approvals in the user's config directory,
// a policy file if given, the terminal when there is one, and refusal
// otherwise.
func approvalSetup(policy string, yes bool) (approval.Approver, *approval.Store, error) {
	path, err := approval.DefaultPath()
	if err != nil {
		return nil, nil, err
	}
	store, err := approval.Open(path)
	if err != nil {
		return nil, nil, err
	}
	var a approval.Approver = approval.Interactive()
	if yes {
		a = approval.Func(func(_ context.Context, r *approval.Request) (approval.Decision, error) {
			return approval.Decision{Allow: r.Kind == approval.Load}, nil
		})
	}
	if policy != "" {
		p, err := approval.LoadPolicy(policy, a)
		if err != nil {
			return nil, nil, err
		}
		a = p
	}
	return a, store, nil
}

func defaultCache() *cache.Cache {
	d, err := cache.DefaultDir()
	if err != nil {
		return nil
	}
	c, err := cache.New(d)
	if err != nil {
		return nil
	}
	return c
}
