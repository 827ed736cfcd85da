package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/cache"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/internal/gitorigin"
	"github.com/skillport/skillport/internal/gitsource"
	"github.com/skillport/skillport/internal/mcphttp"
	"github.com/skillport/skillport/internal/oauth"
	"github.com/skillport/skillport/internal/ociref"
	"github.com/skillport/skillport/internal/siteorigin"
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
	trust        trustFlag // --trusted-key, for the commands that register it

	// Set before register: the command takes no server on its command line
	// (no --label or --header), and its default --timeout.
	noServerArg    bool
	defaultTimeout time.Duration

	timeoutSet bool                             // --timeout was given
	filters    map[string]*gateway.Filter       // a gateway.json's include/exclude lists, by label
	auth       clientAuth                       // how to sign in to the server on the command line
	upstreams  map[string]*gateway.UpstreamAuth // a gateway.json's auth objects, by label
	only       []string                         // pull --skill: skill paths to keep
	refused    []string                         // entries of a site read over HTTP that were not used, and why
	// noDiscovery holds, by label, why a site URL had no discovery
	// document; it was tried as an MCP endpoint, and if that fails too
	// the user hears both.
	noDiscovery map[string]string
	// recheckTags asks a git remote whether a tag already mirrored moved:
	// for install SOURCE, outdated and update, which compare with upstream.
	recheckTags bool
}

// lsTimeout is ls's default --timeout: listing is one round trip, and a
// desktop configuration's npx servers must not hold the answer for the
// 10 s each a fetch may need.
const lsTimeout = 3 * time.Second

func (f *hostFlags) register(cmd *cobra.Command, withLocal bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "an mcpServers configuration, JSON or JSONC (Claude Desktop, Cursor, VS Code, gateway.json or skillport format)")
	if !f.noServerArg {
		fl.StringVar(&f.label, "label", "server", "host label for the server given on the command line")
		fl.StringArrayVarP(&f.headers, "header", "H", nil, `HTTP header for the server URL, "Name: value" (repeatable)`)
		f.auth.register(fl, true)
	} else {
		fl.BoolVar(&f.auth.login, "login", false, "sign in in the browser to a server that asks for it (otherwise say to run skillport auth login)")
	}
	if f.defaultTimeout == 0 {
		f.defaultTimeout = host.DefaultCallTimeout
	}
	fl.DurationVar(&f.timeout, "timeout", f.defaultTimeout, "timeout of each call to a server")
	fl.BoolVar(&f.allowDynamic, "allow-dynamic", false, `accept skills whose resources are "dynamic" (unverifiable)`)
	if withLocal {
		fl.StringArrayVar(&f.skillDirs, "skills-dir", nil, "a local skill folder to include, LABEL=PATH or PATH (repeatable)")
		fl.BoolVar(&f.noLocal, "no-local", false, "with --config, do not include ~/.claude/skills, .claude/skills and .agents/skills")
	}
}

// serverArgs is the usage text for the positional server.
const serverArgs = "[URL | git+URL[@REF][#SUBDIR] | -- COMMAND [ARGS...]]"

// origins builds the origin list: the server named on the command line
// (a URL as the last argument, or a command after --), the configuration
// file's servers and folders, and local skill folders.
func (f *hostFlags) origins(cmd *cobra.Command, args []string, stderr io.Writer) ([]host.Origin, error) {
	name := cmd.Name()
	f.timeoutSet = cmd.Flags().Changed("timeout")
	// This run's, not an earlier in-process run's (a command's flags
	// outlive it: tests run the CLI many times in one process).
	f.refused, f.noDiscovery = nil, nil
	var out []host.Origin
	dash := cmd.ArgsLenAtDash()
	if len(args) == 0 && !f.noServerArg && (cmd.Flags().Changed("header") || cmd.Flags().Changed("label")) {
		return nil, usageErrorf("%s: --header and --label apply to the server named on the command line; name one (a URL, or a command after --), or set them in --config", name)
	}
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
		if gitsource.IsSpec(u) {
			if _, err := gitsource.ParseSpec(u); err != nil {
				return nil, usageErrorf("%s: %v", name, err)
			}
			if err := host.ValidLabel(f.label); err != nil {
				return nil, usageErrorf("%s: --label: %v", name, err)
			}
			out = append(out, host.Origin{Label: f.label, Git: u})
			break
		}
		if ociref.IsSpec(u) {
			if _, err := ociref.Parse(u); err != nil {
				return nil, usageErrorf("%s: %v", name, err)
			}
			if err := host.ValidLabel(f.label); err != nil {
				return nil, usageErrorf("%s: --label: %v", name, err)
			}
			out = append(out, host.Origin{Label: f.label, OCI: u})
			break
		}
		pu, err := url.Parse(u)
		if fi, serr := os.Stat(u); serr == nil && (fi.IsDir() || filepath.Base(u) == "SKILL.md") && (err != nil || pu.Scheme == "") {
			return nil, usageErrorf("%s: %s is a local folder, not a server; give it with --skills-dir %s", name, esc(u), esc(u))
		}
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, usageErrorf("%s: %q is not an http(s) URL, git source or OCI source; give a server URL, git+URL[@REF][#SUBDIR], oci://REGISTRY/REPOSITORY[:TAG], or a command after --", name, u)
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
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			_, warnings, noDiscovery, err := openSite(ctx, stderr, name, &o, f.timeout)
			f.refused = append(f.refused, warnings...)
			if err != nil {
				return nil, err
			}
			if noDiscovery != "" {
				if f.noDiscovery == nil {
					f.noDiscovery = map[string]string{}
				}
				f.noDiscovery[o.Label] = noDiscovery
			}
		}
		out = append(out, o)
	}
	if len(positional) > 0 {
		return nil, usageErrorf("%s: unexpected arguments %q; the server URL comes last", name, positional)
	}
	if f.config != "" {
		cfg, notes, err := f.loadConfig()
		if err != nil {
			return nil, usageErrorf("%s: %s", name, esc(err.Error()))
		}
		for _, n := range notes {
			fmt.Fprintf(stderr, "skillport: %s: %s\n", esc(f.config), esc(n))
		}
		out = append(out, cfg...)
		if !f.noLocal {
			out = append(out, host.DefaultSkillDirs()...)
		}
	}
	for _, d := range f.skillDirs {
		label, path, ok := strings.Cut(d, "=")
		if !ok || gitsource.IsSpec(label) || ociref.IsSpec(label) {
			label, path = "dir", d
		}
		if err := host.ValidLabel(label); err != nil {
			if _, serr := os.Stat(d); serr == nil { // a folder whose name holds "="
				label, path = "dir", d
			} else {
				return nil, usageErrorf("%s: --skills-dir %s: %v (e.g. %s=%s)", name, esc(d), err, esc(strings.ToLower(label)), esc(path))
			}
		}
		if gitsource.IsSpec(path) {
			if _, err := gitsource.ParseSpec(path); err != nil {
				return nil, usageErrorf("%s: --skills-dir: %v", name, err)
			}
			out = append(out, host.Origin{Label: label, Git: path})
			continue
		}
		if ociref.IsSpec(path) {
			if _, err := ociref.Parse(path); err != nil {
				return nil, usageErrorf("%s: --skills-dir: %v", name, err)
			}
			out = append(out, host.Origin{Label: label, OCI: path})
			continue
		}
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			why := "not a directory"
			if err != nil {
				why = "no such directory"
				if !errors.Is(err, fs.ErrNotExist) {
					why = err.Error()
				}
			}
			return nil, usageErrorf("%s: --skills-dir %s: %s", name, esc(path), why)
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
	cmdLabel := ""
	if len(args) > 0 && dash < 0 {
		cmdLabel = f.label
	}
	if err := attachOAuth(name, uniq, cmdLabel, &f.auth, f.upstreams, stderr); err != nil {
		return nil, err
	}
	if f.auth.login && !f.timeoutSet {
		f.timeout = oauth.DefaultLoginTimeout // a sign-in waits for the user
	}
	return uniq, nil
}

// loadConfig reads --config. A gateway.json is read as the gateway reads
// it, so that its include/exclude lists apply here too; any other file as
// an mcpServers configuration.
func (f *hostFlags) loadConfig() ([]host.Origin, []string, error) {
	if data, err := os.ReadFile(f.config); err == nil && gatewayKeys.Match(data) {
		// Its filters must apply or the file must be refused: listing
		// skills the gateway would leave out would mislead.
		cfg, err := gateway.ParseConfig(f.config, data)
		if err != nil {
			return nil, nil, err
		}
		f.filters, f.upstreams = cfg.Filters, cfg.Auth
		return cfg.Origins, cfg.Notes, nil
	}
	return host.LoadConfig(f.config)
}

// gatewayKeys spots a file written for the gateway: only gateway.json
// filters or sets these.
var gatewayKeys = regexp.MustCompile(`"(include|exclude|approvals|tokenBudget|indexBodies|startupWaitMs|callTimeoutMs|auth)"\s*:`)

// admits applies a gateway.json's include/exclude lists.
func (f *hostFlags) admits(e *host.Entry) bool {
	return f.filters[e.Origin].Admits(e.Name, e.Path, e.Qualified)
}

// skills returns the host's skills that the configuration admits.
func (f *hostFlags) skills(h *host.Host) []*host.Entry {
	var out []*host.Entry
	for _, e := range h.Skills() {
		if f.admits(e) {
			out = append(out, e)
		}
	}
	return out
}

// newHost builds and connects a host.
func (f *hostFlags) newHost(ctx context.Context, origins []host.Origin, opts *host.Options) (*host.Host, error) {
	if opts == nil {
		opts = &host.Options{}
	}
	opts.CallTimeout = f.timeout
	opts.ClientInfo = &mcp.Implementation{Name: "skillport", Version: version()}
	opts.AllowDynamic = f.allowDynamic
	opts.Trust = f.trust.hook()
	opts.OpenGit = gitorigin.Opener(&gitorigin.Options{RecheckTags: f.recheckTags})
	opts.OpenOCI = gitorigin.OCIOpener(nil)
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

// openSite starts from the discovery document of the plain web address
// o.URL: o becomes the MCP endpoint the document names, or, when it names
// none, an origin serving the skills read over HTTP(S), each checked
// against its digest (internal/siteorigin). Without a document (an error
// status, an event stream, no answer: host.ErrNoDiscovery) the address is
// left to be tried as the MCP endpoint itself, a server answering at its
// root (the TypeScript SDK's answers a GET with 405), and noDiscovery says
// why, for the user to hear should that fail too. name prefixes the notes
// printed to stderr; warnings are the document's entries not used.
func openSite(ctx context.Context, stderr io.Writer, name string, o *host.Origin, timeout time.Duration) (site *host.Site, warnings []string, noDiscovery string, err error) {
	hc := mcphttp.NewClient(timeout)
	site, err = host.ReadSite(ctx, hc, o.URL, o.Headers)
	if errors.Is(err, host.ErrNoDiscovery) {
		return nil, nil, err.Error(), nil
	}
	if err != nil {
		return nil, nil, "", &exitError{code: 1, err: fmt.Errorf("%s: %w", name, err)}
	}
	mcpURL, err := site.MCPEndpoint(o.Headers)
	if err != nil {
		return nil, nil, "", &exitError{code: 1, err: fmt.Errorf("%s: %w", name, err)}
	}
	if mcpURL != "" {
		fmt.Fprintf(stderr, "skillport: %s: MCP endpoint %s (from %s)\n", name, mcpURL, site.URL)
		o.URL = mcpURL
		return site, nil, "", nil
	}
	t, warnings, err := siteorigin.Open(ctx, site, &siteorigin.Options{Client: hc, Headers: o.Headers})
	for _, w := range warnings {
		fmt.Fprintf(stderr, "skillport: %s: %s\n", name, esc(w))
	}
	if err != nil {
		return nil, warnings, "", &exitError{code: 1, err: fmt.Errorf("%s: %w", name, err)}
	}
	fmt.Fprintf(stderr, "skillport: %s: %s names no MCP endpoint; skills read over HTTP(S), each checked against its digest\n", name, site.URL)
	o.URL, o.Transport, o.Display, o.Headers = "", t, site.URL.String(), nil
	return site, warnings, "", nil
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
