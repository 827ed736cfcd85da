package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/internal/mcphttp"
	"github.com/skillport/skillport/internal/oauth"
)

// openBrowser opens the authorization URL; tests replace it with a client
// that follows the authorization server's login form.
var openBrowser = oauth.OpenBrowser

// clientAuth is how the host identifies itself to an authorization server:
// the flags of auth login and of the commands that connect to servers.
type clientAuth struct {
	login       bool
	noBrowser   bool
	clientID    string
	secretEnv   string
	secretFile  string
	metadataURL string
	scopes      []string
}

func (a *clientAuth) register(fl *pflag.FlagSet, withLogin bool) {
	if withLogin {
		fl.BoolVar(&a.login, "login", false, "sign in in the browser to a server that asks for it (otherwise say to run skillport auth login)")
	}
	fl.BoolVar(&a.noBrowser, "no-browser", false, "print the sign-in URL instead of opening a browser")
	fl.StringVar(&a.clientID, "client-id", "", "the OAuth client `ID` registered for skillport with the server's authorization server")
	fl.StringVar(&a.secretEnv, "client-secret-env", "", "read the client secret from environment variable `NAME`; with --client-id and without --login (or with auth login --client-credentials), tokens come from the client credentials grant (machines)")
	fl.StringVar(&a.secretFile, "client-secret-file", "", "read the client secret from `FILE` (first line)")
	fl.StringVar(&a.metadataURL, "client-metadata-url", "", "an https `URL` of a Client ID Metadata Document describing this client, used where the authorization server accepts one")
	fl.StringArrayVar(&a.scopes, "scope", nil, "an OAuth `SCOPE` to request besides those the server asks for (repeatable)")
}

// secret reads the client secret from where the flags say; never from a
// flag value, which other users can see in the process list.
func (a *clientAuth) secret(name string) (string, error) {
	switch {
	case a.secretEnv != "" && a.secretFile != "":
		return "", usageErrorf("%s: give --client-secret-env or --client-secret-file, not both", name)
	case a.secretEnv != "":
		v, ok := os.LookupEnv(a.secretEnv)
		if !ok || v == "" {
			return "", usageErrorf("%s: --client-secret-env: environment variable %s is not set", name, a.secretEnv)
		}
		return v, nil
	case a.secretFile != "":
		data, err := os.ReadFile(a.secretFile)
		if err != nil {
			return "", usageErrorf("%s: --client-secret-file: %v", name, err)
		}
		v, _, _ := strings.Cut(string(data), "\n")
		if v = strings.TrimSpace(v); v == "" {
			return "", usageErrorf("%s: --client-secret-file %s is empty", name, esc(a.secretFile))
		}
		return v, nil
	}
	return "", nil
}

// options builds the handler options; machine selects the client
// credentials grant when a secret is given.
func (a *clientAuth) options(name string, store *oauth.Store, stderr io.Writer, machine bool) (*oauth.Options, error) {
	secret, err := a.secret(name)
	if err != nil {
		return nil, err
	}
	if secret != "" && a.clientID == "" {
		return nil, usageErrorf("%s: a client secret needs --client-id", name)
	}
	return &oauth.Options{
		Store:             store,
		ClientID:          a.clientID,
		ClientSecret:      secret,
		ClientCredentials: machine && secret != "",
		ClientMetadataURL: a.metadataURL,
		Scopes:            a.scopes,
		Interactive:       a.login,
		NoBrowser:         a.noBrowser,
		Browser:           openBrowser,
		Stderr:            stderr,
	}, nil
}

func tokenStore() (*oauth.Store, error) {
	p, err := oauth.DefaultStorePath()
	if err != nil {
		return nil, err
	}
	return oauth.NewStore(p), nil
}

// attachOAuth gives every HTTP origin without an Authorization header a
// handler: the stored token, refreshed, and on a 401 the command to sign
// in (or, with --login, the browser). The command line's client flags
// apply to the server named on the command line (label cmdLabel); a
// gateway.json's "auth" objects to theirs.
func attachOAuth(name string, origins []host.Origin, cmdLabel string, flags *clientAuth, upstream map[string]*gateway.UpstreamAuth, stderr io.Writer) error {
	var store *oauth.Store
	for i := range origins {
		o := &origins[i]
		if o.URL == "" || o.OAuth != nil || hasAuthorization(o.Headers) {
			continue
		}
		if store == nil {
			s, err := tokenStore()
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("%s: %w", name, err)}
			}
			store = s
		}
		a := &clientAuth{login: flags != nil && flags.login, noBrowser: flags != nil && flags.noBrowser}
		switch {
		case flags != nil && o.Label == cmdLabel:
			a = flags
		case upstream[o.Label] != nil:
			u := upstream[o.Label]
			a.clientID, a.secretEnv, a.secretFile, a.metadataURL, a.scopes = u.ClientID, u.ClientSecretEnv, u.ClientSecretFile, u.ClientMetadataURL, u.Scopes
		}
		// A secret without --login means a machine: client credentials.
		opts, err := a.options(name, store, stderr, !a.login)
		if err != nil {
			return err
		}
		h, err := oauth.New(o.URL, opts)
		if err != nil {
			return usageErrorf("%s: %s: %v", name, o.Label, err)
		}
		o.OAuth = h
	}
	return nil
}

func hasAuthorization(h map[string]string) bool {
	for k := range h {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}

func init() {
	authCmd := &cobra.Command{
		Use:   "auth",
		Short: "Sign in to MCP servers that require OAuth, sign out, and show where you are signed in",
		Long: `auth manages the OAuth tokens skillport uses for servers that require them.
Tokens are kept in skillport/tokens.json in the user's configuration directory
(mode 0600), by server URL, and refreshed when they expire. ls, verify, pull,
load and the gateway use them; when a server needs a sign-in they say which
command to run.

  skillport auth login https://skills.example.com/mcp
  skillport auth status
  skillport auth logout https://skills.example.com/mcp`,
	}
	var ca clientAuth
	var machine bool
	var timeout time.Duration
	login := &cobra.Command{
		Use:   "login [flags] URL",
		Short: "Sign in to the MCP server at URL in the browser (or, with --client-credentials, as a machine)",
		Long: `login connects to the server at URL, follows its 401 to its authorization
server (protected resource metadata, then the authorization server's
metadata), and signs in with the authorization code grant and PKCE: the
browser opens the authorization server's page, which returns to a one-time
listener on 127.0.0.1. Without a display, or with --no-browser, the URL is
printed on stderr and login waits for it to be opened; a browser on another
machine cannot reach the listener, so paste the URL of the page it fails to
load (its address bar) at the prompt.

The client is identified by --client-id (registered with the authorization
server), by --client-metadata-url where the authorization server accepts Client
ID Metadata Documents, or else by dynamic client registration. With
--client-credentials, --client-id and a secret from --client-secret-env or
--client-secret-file, no browser is used: the token comes from the client
credentials grant.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuthLogin(cmd.Context(), cmd.ErrOrStderr(), args[0], &ca, machine, timeout)
		},
	}
	ca.register(login.Flags(), false)
	login.Flags().BoolVar(&machine, "client-credentials", false, "sign in as a machine with the client credentials grant (needs --client-id and a secret)")
	login.Flags().DurationVar(&timeout, "timeout", oauth.DefaultLoginTimeout, "how long to wait for the browser")

	logout := &cobra.Command{
		Use:   "logout URL",
		Short: "Revoke and forget the tokens of the server at URL",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuthLogout(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
		},
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status [URL]",
		Short: "Show the servers you are signed in to (never the tokens)",
		Long: `status lists the servers skillport holds tokens for: server, authorization
server, grant, client id, state (valid until, expired but refreshable,
expired) and scopes. On a terminal it prints a table; piped, one tab-separated
row per server; --json prints JSON. Tokens are never printed.

Exit status: 0, or 1 when URL is given and there is no token for it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuthStatus(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, asJSON)
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	authCmd.AddCommand(login, logout, status)
	rootCmd.AddCommand(authCmd)
}

func serverURL(name, u string) (string, error) {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return "", usageErrorf("%s: %q is not an http(s) URL of an MCP server", name, u)
	}
	return u, nil
}

func runAuthLogin(ctx context.Context, stderr io.Writer, u string, ca *clientAuth, machine bool, timeout time.Duration) error {
	u, err := serverURL("auth login", u)
	if err != nil {
		return err
	}
	if machine && (ca.clientID == "" || (ca.secretEnv == "" && ca.secretFile == "")) {
		return usageErrorf("auth login: --client-credentials needs --client-id and --client-secret-env NAME or --client-secret-file FILE")
	}
	store, err := tokenStore()
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	ca.login = !machine
	opts, err := ca.options("auth login", store, stderr, machine)
	if err != nil {
		return err
	}
	opts.LoginTimeout = timeout
	opts.Fresh = true
	if term.IsTerminal(int(os.Stdin.Fd())) {
		opts.Paste = os.Stdin // a browser on another machine: the redirected URL, pasted
	}
	h, err := oauth.New(u, opts)
	if err != nil {
		return usageErrorf("auth login: %v", err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "skillport", Version: version()}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: mcphttp.NewClient(0), OAuthHandler: h, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		var lr *oauth.LoginRequiredError
		if errors.As(err, &lr) {
			err = lr
		}
		return &exitError{code: 1, err: fmt.Errorf("auth login: %s: %w", u, err)}
	}
	s.Close()
	if !h.Authorized() {
		return &exitError{code: 1, err: fmt.Errorf("auth login: %s did not ask for a token (it answered without one); nothing was stored", u)}
	}
	fmt.Fprintf(stderr, "Signed in to %s; token saved in %s\n", u, store.Path())
	return nil
}

func runAuthLogout(ctx context.Context, stdout, stderr io.Writer, u string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	store, err := tokenStore()
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	t, err := store.Get(u)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("auth logout: %w", err)}
	}
	if t == nil {
		return &exitError{code: 1, err: fmt.Errorf("auth logout: not signed in to %s (see skillport auth status)", u)}
	}
	// Revoked first, so that a copy of the token is useless too; forgotten
	// either way.
	rerr := oauth.Revoke(ctx, nil, t)
	if _, err := store.Delete(u); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("auth logout: %w", err)}
	}
	fmt.Fprintf(stdout, "Signed out of %s\n", u)
	if rerr != nil {
		fmt.Fprintf(stderr, "skillport: auth logout: the token was forgotten but not revoked: %s\n", esc(rerr.Error()))
	}
	return nil
}

// authStatus is one server of auth status --json: everything but the
// tokens.
type authStatus struct {
	Server     string    `json:"server"`
	Issuer     string    `json:"issuer,omitempty"`
	Grant      string    `json:"grant"`
	ClientID   string    `json:"clientId"`
	State      string    `json:"state"` // valid, refreshable, expired
	Expiry     time.Time `json:"expiry,omitzero"`
	Scopes     []string  `json:"scopes"`
	Refreshing bool      `json:"hasRefreshToken"`
}

func runAuthStatus(stdout, stderr io.Writer, args []string, asJSON bool) error {
	store, err := tokenStore()
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	all, err := store.List()
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("auth status: %w", err)}
	}
	rows := []authStatus{}
	for _, t := range all {
		if len(args) > 0 && t.Resource != args[0] {
			continue
		}
		st := authStatus{Server: t.Resource, Issuer: t.Issuer, Grant: t.Grant, ClientID: t.ClientID, Expiry: t.Expiry, Scopes: t.Scopes, Refreshing: t.RefreshToken != ""}
		if st.Scopes == nil {
			st.Scopes = []string{}
		}
		switch {
		case t.Expiry.IsZero() || time.Now().Before(t.Expiry):
			st.State = "valid"
		case t.RefreshToken != "":
			st.State = "refreshable"
		default:
			st.State = "expired"
		}
		rows = append(rows, st)
	}
	if len(args) > 0 && len(rows) == 0 {
		if asJSON {
			writeJSON(stdout, rows)
		}
		return &exitError{code: 1, err: fmt.Errorf("auth status: not signed in to %s; run: skillport auth login %s", args[0], args[0])}
	}
	if asJSON {
		return writeJSON(stdout, rows)
	}
	if len(rows) == 0 {
		// On stderr: a program reading stdout still gets no rows.
		fmt.Fprintln(stderr, "skillport: auth status: not signed in to any server; skillport auth login URL signs in to one")
		return nil
	}
	state := func(r authStatus) string {
		switch {
		case r.State == "valid" && !r.Expiry.IsZero():
			return "valid until " + r.Expiry.UTC().Format(time.RFC3339)
		case r.State == "refreshable":
			return "expired, refreshable"
		}
		return r.State
	}
	if terminalWidth(stdout) == 0 {
		for _, r := range rows {
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\t%s\t%s\n", esc(r.Server), esc(r.Issuer), r.Grant, esc(r.ClientID), state(r), esc(strings.Join(r.Scopes, " ")))
		}
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "Not signed in to any server. Sign in with: skillport auth login URL")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tAUTHORIZATION SERVER\tGRANT\tCLIENT\tSTATE\tSCOPES")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", esc(r.Server), esc(r.Issuer), r.Grant, esc(r.ClientID), state(r), esc(strings.Join(r.Scopes, " ")))
	}
	return tw.Flush()
}
