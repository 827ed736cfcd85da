package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skillport/skillport/internal/gitspec"
	"github.com/skillport/skillport/internal/mcphttp"
	"github.com/skillport/skillport/internal/ociref"
	"github.com/skillport/skillport/wire"
)

// Origin configures one source of skills: an MCP server reached over stdio
// (Command) or Streamable HTTP (URL), a ready-made Transport (an in-process
// server), a local skill folder (Dir), a git source (Git) or an OCI
// reference (OCI). Exactly one of them is set.
type Origin struct {
	// Label is the host-assigned identity of the origin, matching
	// ^[a-z0-9][a-z0-9-]{0,31}$. It is what the model and the user see, and
	// half of every skill's identity; the server's self-reported
	// serverInfo.name is never used in its place.
	Label string

	// Command, Args, Env and WorkDir start a server speaking MCP on stdio.
	// Env is added to the host's environment.
	Command string
	Args    []string
	Env     map[string]string
	WorkDir string

	// URL is a Streamable HTTP endpoint; Headers are sent with every request
	// (for example Authorization: Bearer …).
	URL     string
	Headers map[string]string
	// OAuth, with URL, signs requests in to a server that requires OAuth
	// and answers its 401 (package host/oauth); nil sends no token but
	// those in Headers.
	OAuth auth.OAuthHandler

	// Transport connects to a server directly, e.g. mcp.NewInMemoryTransports.
	Transport mcp.Transport

	// Dir is a local folder of skills (each subfolder with a SKILL.md).
	// Display is how the folder (or a Transport's far end) is shown to
	// the user ("~/.claude/skills").
	Dir     string
	Display string

	// Git is a git source, git+URL[@REF][#SUBDIR] (see package gitsource).
	// Options.OpenGit connects to it (gitorigin.Opener mirrors the commit
	// and serves it through an in-process skillport server), so its skills
	// are verified and pulled like those of any MCP server.
	Git string

	// OCI is an OCI source, oci://REGISTRY/REPOSITORY[:TAG|@DIGEST] (see
	// docs/oci.md). Options.OpenOCI connects to it (gitorigin.OCIOpener
	// fetches and checks the artifacts and serves them through an
	// in-process skillport server), as for Git.
	OCI string
}

var labelRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// ValidLabel reports why s cannot be an origin label, or nil.
func ValidLabel(s string) error {
	if !labelRE.MatchString(s) {
		return fmt.Errorf("origin label %q must be 1-32 lowercase letters, digits and hyphens, starting with a letter or digit", s)
	}
	return nil
}

// Kind returns the origin's kind.
func (o *Origin) Kind() Kind {
	if o.Dir != "" {
		return KindFilesystem
	}
	return KindMCP
}

func (o *Origin) validate() error {
	if err := ValidLabel(o.Label); err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{o.Command != "", o.URL != "", o.Transport != nil, o.Dir != "", o.Git != "", o.OCI != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("origin %s: set exactly one of Command, URL, Transport, Dir, Git or OCI", o.Label)
	}
	return nil
}

// Where describes how the origin is reached, for messages.
func (o *Origin) Where() string {
	switch {
	case o.Command != "":
		return "stdio: " + o.Command
	case o.URL != "":
		return o.URL
	case o.Git != "":
		if sp, err := gitspec.ParseSpec(o.Git); err == nil {
			return sp.String()
		}
		return "git source"
	case o.OCI != "":
		if r, err := ociref.Parse(o.OCI); err == nil {
			return r.String()
		}
		return "OCI source"
	case o.Dir != "":
		if o.Display != "" {
			return o.Display
		}
		return o.Dir
	}
	if o.Display != "" {
		return o.Display
	}
	return "in-process transport"
}

// MaxMessageBytes bounds one message from a server: a 16 MiB file as
// base64, with room for the JSON around it. It is checked by the transport
// before a message is decoded; over HTTP each answer is bounded tighter,
// by what its request can legitimately receive (docs/client.md).
const MaxMessageBytes = mcphttp.MaxMessage

// transport builds the mcp.Transport for an MCP origin. Over HTTP, rec
// (when set) keeps the last refusal or network error, for the message.
func (o *Origin) transport(stderr io.Writer, rec *httpRecorder) mcp.Transport {
	switch {
	case o.Transport != nil:
		return o.Transport
	case o.Command != "":
		return &commandTransport{origin: o, stderr: stderr}
	default:
		var rt http.RoundTripper = &mcphttp.Transport{}
		if len(o.Headers) > 0 {
			rt = &headerTransport{headers: o.Headers, origin: origin(o.URL), next: rt}
		}
		if rec != nil {
			rec.next = rt
			rt = rec
		}
		return &mcp.StreamableClientTransport{
			Endpoint:   o.URL,
			HTTPClient: &http.Client{Transport: rt, CheckRedirect: mcphttp.CheckRedirect},
			MaxRetries: 1,
			// Above the bound mcphttp cuts an answer at, so that the cut,
			// which fails one call, comes before go-sdk's, which fails
			// the session.
			MaxEventSize: MaxMessageBytes + mcphttp.Envelope,
			OAuthHandler: o.OAuth,
		}
	}
}

// httpRecorder keeps what the SDK's error drops: the status and
// WWW-Authenticate challenge of the last refusal, or the network error.
// It also puts the session's protocol revision on the notifications the
// SDK posts without it: go-sdk v1.8 sends notifications/cancelled of a
// 2026-07-28 connection (no initialize result, no _meta in the
// notification) without the Mcp-Protocol-Version header that revision
// requires on every request.
type httpRecorder struct {
	next http.RoundTripper

	mu      sync.Mutex
	status  int
	auth    string
	err     error
	version string // Mcp-Protocol-Version of the last accepted request
}

const protocolHeader = "Mcp-Protocol-Version"

func (t *httpRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	sent, notification := r.Header.Get(protocolHeader), false
	if r.Method == http.MethodPost && sent == "" {
		notification = isNotification(r)
		t.mu.Lock()
		v := t.version
		t.mu.Unlock()
		if notification && v != "" {
			r = r.Clone(r.Context())
			r.Header.Set(protocolHeader, v)
		}
	}
	resp, err := t.next.RoundTrip(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	// The revision is that of the last accepted request: an initialize
	// (no header) after an accepted server/discover means a session
	// without the header until the SDK sends it again.
	if err == nil && resp.StatusCode < 300 && r.Method == http.MethodPost && !notification {
		t.version = sent
	}
	switch {
	case err != nil:
		t.status, t.auth, t.err = 0, "", err
	case resp.StatusCode >= 400:
		t.status, t.auth, t.err = resp.StatusCode, resp.Header.Get("WWW-Authenticate"), nil
	default: // a later answer (an initialize after a refused server/discover) clears an earlier refusal
		t.status, t.auth, t.err = 0, "", nil
	}
	return resp, err
}

// explain returns the failure seen on the way to url, or nil.
func (t *httpRecorder) explain(url string) *HTTPError {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status == 0 && t.err == nil {
		return nil
	}
	e := &HTTPError{URL: url, Status: t.status, Err: t.err}
	e.AuthError, e.Description, e.Scope = parseChallenge(t.auth)
	return e
}

// isNotification reports whether r posts one JSON-RPC notification (a
// method, no id), reading a copy of its body (bounded: notifications are
// small).
func isNotification(r *http.Request) bool {
	if r.GetBody == nil {
		return false
	}
	body, err := r.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, 64<<10))
	if err != nil {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(data, &m) == nil && m.ID == nil && strings.HasPrefix(m.Method, "notifications/")
}

// headerTransport adds the origin's configured headers (often a bearer
// token) to the requests to that origin only: never to one a redirect
// points elsewhere.
type headerTransport struct {
	headers map[string]string
	origin  string
	next    http.RoundTripper
}

func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return mcphttp.Origin(u)
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if mcphttp.Origin(r.URL) != t.origin {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}

// commandTransport runs a server as a subprocess. Unlike mcp.CommandTransport
// it raises the per-message limit to MaxMessageBytes (a skill may hold a
// 16 MiB file), kills a server that does not exit after its stdin closes,
// and keeps the last lines the server wrote to stderr and its exit status:
// a server that dies at start-up says why there ("missing API key"), and
// the user must see that rather than the EOF it causes.
type commandTransport struct {
	origin *Origin
	stderr io.Writer

	tail   stderrTail
	exited chan struct{} // closed once the process has been waited for
	state  *os.ProcessState
	werr   error
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := exec.Command(t.origin.Command, t.origin.Args...)
	cmd.Dir = t.origin.WorkDir
	if len(t.origin.Env) > 0 {
		cmd.Env = os.Environ()
		for k, v := range t.origin.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stderr = io.MultiWriter(t.stderr, &t.tail)
	// A grandchild that keeps stderr open must not hold Wait forever.
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Our own pipe, not StdoutPipe: Wait runs as soon as the process exits
	// (for its status) and must not close stdout before it has been read.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		return nil, fmt.Errorf("starting %s: %w", t.origin.Command, err)
	}
	t.exited = make(chan struct{})
	go func() {
		err := cmd.Wait()
		t.state, t.werr = cmd.ProcessState, err
		close(t.exited)
	}()
	inner, err := (&mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: MaxMessageBytes}).Connect(ctx)
	if err != nil {
		cmd.Process.Kill()
		<-t.exited
		stdout.Close()
		return nil, err
	}
	return &processConn{Connection: inner, cmd: cmd, exited: t.exited, stdout: stdout}, nil
}

// report describes how the process ended and what it last wrote to stderr,
// as lines to append to an error; "" when there is nothing to say. It
// waits up to wait for a process whose connection just failed to exit
// (and for its last stderr lines to be read).
func (t *commandTransport) report(wait time.Duration) string {
	if t.exited == nil {
		return ""
	}
	var b strings.Builder
	select {
	case <-t.exited:
		switch {
		case t.state != nil && t.state.Exited():
			fmt.Fprintf(&b, "\n%s exited with status %d", t.origin.Command, t.state.ExitCode())
		case t.state != nil:
			fmt.Fprintf(&b, "\n%s was ended by %s", t.origin.Command, t.state.String())
		case t.werr != nil:
			fmt.Fprintf(&b, "\n%s: %v", t.origin.Command, t.werr)
		}
	case <-time.After(wait):
	}
	if lines := t.tail.lines(); len(lines) > 0 {
		if b.Len() == 0 {
			fmt.Fprintf(&b, "\n%s", t.origin.Command)
		}
		b.WriteString("; its last stderr lines:")
		for _, l := range lines {
			b.WriteString("\n  " + l)
		}
	}
	return b.String()
}

// processReport is the report of a stdio server's transport, or "".
func processReport(t mcp.Transport, wait time.Duration) string {
	if ct, ok := t.(*commandTransport); ok {
		return ct.report(wait)
	}
	return ""
}

// stderrTail keeps the last stderrTailLines lines (each cut to
// stderrTailLine bytes) of what a server wrote to stderr: a bounded
// memory however much a server writes.
type stderrTail struct {
	mu      sync.Mutex
	done    []string
	partial []byte
}

const (
	stderrTailLines = 10
	stderrTailLine  = 300
)

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range p {
		if c == '\n' {
			t.done = append(t.done, string(t.partial))
			if len(t.done) > stderrTailLines {
				t.done = t.done[1:]
			}
			t.partial = t.partial[:0]
			continue
		}
		if len(t.partial) < stderrTailLine {
			t.partial = append(t.partial, c)
		}
	}
	return len(p), nil
}

func (t *stderrTail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.done...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	if len(out) > stderrTailLines {
		out = out[len(out)-stderrTailLines:]
	}
	return out
}

type processConn struct {
	mcp.Connection
	cmd    *exec.Cmd
	exited <-chan struct{}
	stdout *os.File
	once   sync.Once
	err    error
}

func (c *processConn) Close() error {
	c.once.Do(func() {
		c.err = c.Connection.Close() // closes stdin: a well-behaved server exits
		select {
		case <-c.exited:
		case <-time.After(2 * time.Second):
			c.cmd.Process.Kill()
			<-c.exited
		}
		c.stdout.Close()
	})
	return c.err
}

// Read and Write pass through; they are listed so the wrapper is complete.
func (c *processConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err != nil && strings.Contains(err.Error(), "exceeded the configured maximum line length") {
		// go-sdk's message does not say what the bound is.
		err = fmt.Errorf("%w: a message from the server is over %d bytes, the most the host reads (docs/client.md)", err, MaxMessageBytes)
	}
	return m, err
}
func (c *processConn) Write(ctx context.Context, m jsonrpc.Message) error {
	return c.Connection.Write(ctx, m)
}

// declaration returns the extension settings a server declared, under
// capabilities.extensions or (for older SDKs that strip unknown keys)
// capabilities.experimental.
func declaration(caps *mcp.ServerCapabilities) (wire.Settings, bool) {
	if caps == nil {
		return wire.Settings{}, false
	}
	for _, m := range []map[string]any{caps.Extensions, caps.Experimental} {
		v, ok := m[wire.ExtensionID]
		if !ok {
			continue
		}
		settings, isObj := v.(map[string]any)
		if !isObj {
			continue
		}
		dr, _ := settings["directoryRead"].(bool)
		return wire.Settings{DirectoryRead: dr}, true
	}
	return wire.Settings{}, false
}

var errNoResources = errors.New("declares the Skills extension without the resources capability; its skills cannot be read (H-49)")

// guardedTransport remembers its connection so that a stuck Connect can be
// abandoned, and makes writes honour their context: a server that stops
// reading would otherwise block a call past its timeout.
type guardedTransport struct {
	inner mcp.Transport
	// changed asks for the server's skills to be listed again, when the
	// compatibility profiles' wrapper of the connection sees it must.
	changed func()
	mu      sync.Mutex
	conn    mcp.Connection
	gone    bool
}

func (t *guardedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone {
		c.Close()
		return nil, errors.New("connection abandoned")
	}
	// go-sdk's Streamable HTTP client sends each message as a request
	// bound to the write's context, so its writes already end with it: no
	// goroutine per write is needed there (it cost a host about a tenth of
	// its discovery CPU).
	_, direct := t.inner.(*mcp.StreamableClientTransport)
	if compatProfiles != nil {
		c = compatProfiles.wrap(c, t.changed)
	}
	t.conn = &ctxConn{Connection: c, direct: direct}
	return t.conn, nil
}

// wrapped returns the connection as the compatibility profiles wrapped it,
// or nil before Connect.
func (t *guardedTransport) wrapped() mcp.Connection {
	t.mu.Lock()
	defer t.mu.Unlock()
	cc, ok := t.conn.(*ctxConn)
	if !ok {
		return nil
	}
	return cc.Connection
}

// settle ends the connection's set-up for the compatibility profiles.
func (t *guardedTransport) settle() {
	if c := t.wrapped(); c != nil && compatProfiles != nil {
		compatProfiles.settle(c)
	}
}

func (t *guardedTransport) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gone = true
	if t.conn != nil {
		t.conn.Close()
	}
}

type ctxConn struct {
	mcp.Connection
	direct bool // the connection's writes already honour their context
}

func (c *ctxConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if c.direct {
		return c.Connection.Write(ctx, m)
	}
	done := make(chan error, 1)
	go func() { done <- c.Connection.Write(ctx, m) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// A context that ended just as the write started is no sign of a stuck
	// peer; give the write a moment before giving up on the connection.
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
		c.Connection.Close()
		return fmt.Errorf("server stopped reading: %w", ctx.Err())
	}
}
