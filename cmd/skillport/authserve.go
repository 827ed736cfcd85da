package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/spf13/pflag"

	"github.com/skillport/skillport/access"
	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/endpoint"
	"github.com/skillport/skillport/server"
	"github.com/skillport/skillport/web"
)

func authFlags(f *pflag.FlagSet) {
	f.String("auth-issuer", "", "with --http, require OAuth bearer tokens issued by the authorization server at `URL` (its metadata and keys are discovered)")
	f.String("auth-audience", "", "this server's resource `URI` (RFC 8707), which tokens must name as audience, e.g. https://skills.example.com/mcp")
	f.StringArray("auth-scope", nil, "a `SCOPE` every token must grant (repeatable)")
	f.String("auth-rules", "", "a JSONC `FILE` of visibility rules: which callers (by scope, group, subject) see which skills (see the README, \"Authorization\")")
}

// serveAuth is what the --auth-* flags configure; nil when they are not
// given.
type serveAuth struct {
	auth  *endpoint.Auth
	rules *access.Rules // nil: every authorized caller sees every skill
}

func authOptions(ctx context.Context, f *pflag.FlagSet, isHTTP bool) (*serveAuth, error) {
	issuer, _ := f.GetString("auth-issuer")
	audience, _ := f.GetString("auth-audience")
	scopes, _ := f.GetStringArray("auth-scope")
	rulesFile, _ := f.GetString("auth-rules")
	if issuer == "" {
		if audience != "" || len(scopes) > 0 || rulesFile != "" {
			return nil, usageErrorf("serve: --auth-audience, --auth-scope and --auth-rules need --auth-issuer URL, the authorization server that issues the tokens")
		}
		return nil, nil
	}
	if !isHTTP {
		return nil, usageErrorf("serve: --auth-issuer applies to --http only (a stdio server's caller is whoever started it)")
	}
	if audience == "" {
		return nil, usageErrorf("serve: --auth-issuer needs --auth-audience URI, the URL clients use for this server's /mcp")
	}
	sa := &serveAuth{}
	if rulesFile != "" {
		r, err := access.Load(rulesFile)
		if err != nil {
			return nil, usageErrorf("serve: --auth-rules: %v", err)
		}
		sa.rules = r
	}
	if ctx == nil {
		ctx = context.Background()
	}
	a, err := endpoint.NewAuth(ctx, endpoint.AuthOptions{Issuer: issuer, Audience: audience, Scopes: scopes})
	if err != nil {
		return nil, &exitError{code: 1, err: err}
	}
	sa.auth = a
	return sa, nil
}

// visible is the one decision for MCP and web alike: an anonymous caller
// sees nothing on an authorized server; an authorized one what the rules
// grant (everything without rules).
func (sa *serveAuth) visible(c *server.Caller, sk *catalog.Skill) bool {
	if sa.rules == nil {
		return c != nil
	}
	return sa.rules.Visible(c, sk)
}

// source is what the MCP server answers from: src seen through the rules.
func (sa *serveAuth) source(src server.Source) server.Source {
	if sa == nil || sa.rules == nil {
		return src
	}
	return access.Filter(src, sa.visible)
}

func (sa *serveAuth) endpointAuth() *endpoint.Auth {
	if sa == nil {
		return nil
	}
	return sa.auth
}

// mountWebVisible is mountWeb, showing each caller of an authorized server
// only the skills the rules grant it.
func mountWebVisible(ep *endpoint.Endpoint, src server.Source, log *slog.Logger, sa *serveAuth) error {
	if sa == nil {
		return mountWeb(ep, src, log)
	}
	h, err := web.New(src, &web.Options{MCPPath: ep.Options().Path, Logger: log, Visible: func(r *http.Request, sk *catalog.Skill) bool {
		return sa.visible(server.CallerFromContext(r.Context()), sk)
	}})
	if err != nil {
		return err
	}
	id := sa.auth.Identify(h)
	for _, p := range h.Routes() {
		ep.Handle(p, id)
	}
	return nil
}
