package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/access"
	"github.com/skillport/skillport/internal/endpoint"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/web"
	"github.com/skillport/skillport/skillserver"
)

func authFlags(f *pflag.FlagSet) {
	f.String("auth-issuer", "", "with --http, require OAuth bearer tokens issued by the authorization server at `URL` (its metadata and keys are discovered)")
	f.String("auth-audience", "", "this server's resource `URI` (RFC 8707), which tokens must name as audience, e.g. https://skills.example.com/mcp")
	f.StringArray("auth-scope", nil, "a `SCOPE` every token must grant (repeatable)")
	f.String("auth-rules", "", "a JSONC `FILE` of visibility rules: which callers (by scope, group, subject) see which skills (see the README, \"Authorization\")")
	f.String("auth-introspection-client", "", "accept opaque tokens through RFC 7662 introspection, calling the endpoint as client `ID`; its secret comes from $"+introspectionSecretEnv+" or --auth-introspection-secret-file")
	f.String("auth-introspection-secret-file", "", "a `FILE` holding the introspection client's secret (never pass a secret as a flag)")
	f.String("auth-introspection-url", "", "the introspection endpoint `URL`; default: the issuer metadata's introspection_endpoint")
}

// introspectionSecretEnv names the environment variable holding the
// introspection client's secret.
const introspectionSecretEnv = "SKILLPORT_INTROSPECTION_SECRET"

// introspection reads the --auth-introspection-* flags; nil when not asked for.
func introspection(f *pflag.FlagSet, who string) (*endpoint.Introspection, error) {
	id, _ := f.GetString("auth-introspection-client")
	file, _ := f.GetString("auth-introspection-secret-file")
	u, _ := f.GetString("auth-introspection-url")
	if id == "" {
		if file != "" || u != "" {
			return nil, usageErrorf("%s: --auth-introspection-url and --auth-introspection-secret-file need --auth-introspection-client ID", who)
		}
		return nil, nil
	}
	secret := os.Getenv(introspectionSecretEnv)
	if file != "" {
		b, err := readSmallFile(file, 64<<10)
		if err != nil {
			return nil, usageErrorf("%s: --auth-introspection-secret-file: %v", who, err)
		}
		secret = strings.TrimSpace(string(b))
	}
	if secret == "" {
		return nil, usageErrorf("%s: --auth-introspection-client needs the client's secret in $%s or a file named by --auth-introspection-secret-file", who, introspectionSecretEnv)
	}
	return &endpoint.Introspection{URL: u, ClientID: id, ClientSecret: secret}, nil
}

// serveAuth is what the --auth-* flags configure; nil when they are not
// given.
type serveAuth struct {
	auth  *endpoint.Auth
	rules *access.Rules // nil: every authorized caller sees every skill
}

func authOptions(ctx context.Context, f *pflag.FlagSet, who string, isHTTP bool) (*serveAuth, error) {
	issuer, _ := f.GetString("auth-issuer")
	audience, _ := f.GetString("auth-audience")
	scopes, _ := f.GetStringArray("auth-scope")
	rulesFile, _ := f.GetString("auth-rules")
	intro, err := introspection(f, who)
	if err != nil {
		return nil, err
	}
	if issuer == "" {
		if audience != "" || len(scopes) > 0 || rulesFile != "" || intro != nil {
			return nil, usageErrorf("%s: --auth-audience, --auth-scope and --auth-rules need --auth-issuer URL, the authorization server that issues the tokens", who)
		}
		return nil, nil
	}
	if !isHTTP {
		return nil, usageErrorf("%s: --auth-issuer applies to --http only (a stdio server's caller is whoever started it)", who)
	}
	if audience == "" {
		return nil, usageErrorf("%s: --auth-issuer needs --auth-audience URI, the URL clients use for this server's /mcp", who)
	}
	sa := &serveAuth{}
	if rulesFile != "" {
		r, err := access.Load(rulesFile)
		if err != nil {
			return nil, usageErrorf("%s: --auth-rules: %v", who, err)
		}
		sa.rules = r
	}
	if ctx == nil {
		ctx = context.Background()
	}
	a, err := endpoint.NewAuth(ctx, endpoint.AuthOptions{Issuer: issuer, Audience: audience, Scopes: scopes, Introspection: intro})
	if err != nil {
		return nil, &exitError{code: 1, err: err}
	}
	sa.auth = a
	return sa, nil
}

// visible is the one decision for MCP and web alike: an anonymous caller
// sees nothing on an authorized server; an authorized one what the rules
// grant (everything without rules).
func (sa *serveAuth) visible(c *skillserver.Caller, sk *catalog.Skill) bool {
	if sa.rules == nil {
		return c != nil
	}
	return sa.rules.Visible(c, sk)
}

// source is what the MCP server answers from: src seen through the rules.
func (sa *serveAuth) source(src published.Source) published.Source {
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
func mountWebVisible(ep *endpoint.Endpoint, src published.Source, log *slog.Logger, sa *serveAuth, reg web.Registry) error {
	if sa == nil {
		return mountWebWith(ep, src, &web.Options{MCPPath: ep.Options().Path, Logger: log, Registry: reg})
	}
	// The web answers from the same per-caller views as MCP (sa.source),
	// so a hidden skill nested in a visible one is absent there too.
	h, err := web.New(sa.source(src), &web.Options{MCPPath: ep.Options().Path, Logger: log, Registry: reg, Visible: func(r *http.Request, sk *catalog.Skill) bool {
		return sa.visible(skillserver.CallerFromContext(r.Context()), sk)
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

// readSmallFile reads a file of at most limit bytes.
func readSmallFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return b, nil
}
