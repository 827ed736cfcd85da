// Package mcphttp is the HTTP client side every MCP client of skillport
// shares (host, skillclient, gateway, the sign-in client): it bounds every
// response a server sends by what the request can legitimately receive,
// and it keeps credentials to the origin they were meant for.
//
// A go-sdk Streamable HTTP client reads an application/json answer whole
// (io.ReadAll) and an SSE event up to its MaxEventSize; neither knows what
// the request was for. [Transport] does: the caller puts the most a
// request may receive in its context ([WithLimit], [FileLimit]) and every
// response body is cut there. An answer over its limit is replaced by a
// JSON-RPC error for that call (naming the method, the URI and the limit),
// so the call fails and the session goes on.
package mcphttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Bounds on what one response may carry. They are documented in
// docs/client.md; change both together.
const (
	// MaxMessage is the most bytes any one message from a server may take,
	// on every transport (HTTP bodies, SSE events, stdio lines): a 16 MiB
	// file (the limit of a whole skill) as base64 is 21.4 MiB, with room
	// for the envelope. It is also the bound of a request that set no
	// limit of its own, such as a page of skills/list, which a server must
	// paginate below it.
	MaxMessage = 32 << 20
	// Envelope is what a resources/read answer may carry beyond its
	// content: the JSON-RPC and result fields, the URI, the media type.
	Envelope = 64 << 10
	// MaxErrorBody bounds the body of an HTTP error (a status outside
	// 2xx): only a JSON-RPC error or a line of text is expected there.
	MaxErrorBody = 64 << 10
	// escapeFactor is the worst growth of a file's bytes in a JSON
	// string: a control character (or <, >, & from an HTML-escaping
	// encoder) becomes \u00XX, six bytes for one. Base64 (4/3) is below it.
	escapeFactor = 6
)

// CodeTooLarge is the JSON-RPC error code of a call whose answer went over
// its limit. The client sets it, never a server.
const CodeTooLarge = -32099

type limitKey struct{}

// WithLimit returns ctx carrying the most bytes the answer to a request
// made with it may take. n is capped at [MaxMessage]; n <= 0 leaves the
// default ([MaxMessage]).
func WithLimit(ctx context.Context, n int64) context.Context {
	if n <= 0 || n > MaxMessage {
		n = MaxMessage
	}
	return context.WithValue(ctx, limitKey{}, n)
}

// FileLimit is the most bytes a resources/read of a file whose entry
// declares size bytes may legitimately take: size escaped at worst, plus
// the envelope, capped at [MaxMessage]. A negative size (unknown) gives
// MaxMessage.
func FileLimit(size int64) int64 {
	if size < 0 || size > (MaxMessage-Envelope)/escapeFactor {
		return MaxMessage
	}
	return size*escapeFactor + Envelope
}

// Limit returns the limit ctx carries, or [MaxMessage].
func Limit(ctx context.Context) int64 {
	if n, ok := ctx.Value(limitKey{}).(int64); ok {
		return n
	}
	return MaxMessage
}

// Transport bounds the responses of the round tripper it wraps. Wrap the
// transport of every *http.Client an MCP client uses.
type Transport struct {
	// Next makes the requests; nil means http.DefaultTransport.
	Next http.RoundTripper
}

// RoundTrip sends r and returns its response with a bounded body: an
// application/json answer longer than the request's limit, or an SSE
// stream of a call that goes past it, is replaced by (or ends with) a
// JSON-RPC error for the call.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	next := t.Next
	if next == nil {
		next = http.DefaultTransport
	}
	limit := Limit(r.Context())
	resp, err := next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body = &cutBody{r: io.LimitReader(resp.Body, MaxErrorBody), c: resp.Body}
		return resp, nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "application/json" && r.Method == http.MethodPost:
		return boundJSON(r, resp, limit)
	case mt == "text/event-stream" && r.Method == http.MethodPost:
		resp.Body = &sseBody{r: resp.Body, left: limit, req: r}
	case mt == "text/event-stream":
		// The standalone stream (GET) lives as long as the session and
		// carries many messages: each is bounded, not their sum.
		resp.Body = &eventBody{r: resp.Body, max: limit}
	default:
		resp.Body = &cutBody{r: io.LimitReader(resp.Body, limit), c: resp.Body}
	}
	return resp, nil
}

// boundJSON reads an application/json answer up to limit. Read whole here
// rather than cut while go-sdk reads it: go-sdk fails the whole session on
// a body it cannot read, where an answer over its limit should fail only
// its call.
func boundJSON(r *http.Request, resp *http.Response, limit int64) (*http.Response, error) {
	if resp.ContentLength > limit {
		resp.Body.Close()
		return tooLarge(r, resp, limit), nil
	}
	if resp.ContentLength >= 0 {
		// net/http stops at the declared length: nothing to cut.
		return resp, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return tooLarge(r, resp, limit), nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	return resp, nil
}

// call is what a request body says about the call it makes.
type call struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		URI string `json:"uri"`
	} `json:"params"`
}

// maxRequestPeek bounds what is read of a request body to name its call;
// requests are small, the host writes them itself.
const maxRequestPeek = 1 << 20

func describe(r *http.Request) call {
	var c call
	if r.GetBody == nil {
		return c
	}
	b, err := r.GetBody()
	if err != nil {
		return c
	}
	defer b.Close()
	_ = json.NewDecoder(io.LimitReader(b, maxRequestPeek)).Decode(&c)
	return c
}

// tooLargeMessage is the message of the error a call gets when its answer
// went over its limit.
func tooLargeMessage(c call, limit int64) string {
	what := c.Method
	if what == "" {
		what = "the request"
	}
	if c.Params.URI != "" {
		what += " " + clip(c.Params.URI)
	}
	return fmt.Sprintf("%s: the server's answer is over %d bytes, the most this request can legitimately take (docs/client.md); refused", what, limit)
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// errorResponse is the JSON-RPC error answering c.
func errorResponse(c call, limit int64) []byte {
	id := c.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": CodeTooLarge, "message": tooLargeMessage(c, limit)},
	})
	return b
}

func tooLarge(r *http.Request, resp *http.Response, limit int64) *http.Response {
	body := errorResponse(describe(r), limit)
	h := resp.Header.Clone()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	return &http.Response{
		Status: resp.Status, StatusCode: resp.StatusCode, Proto: resp.Proto,
		ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: resp.Request,
	}
}

// cutBody reads r, closes c.
type cutBody struct {
	r io.Reader
	c io.Closer
}

func (b *cutBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *cutBody) Close() error               { return b.c.Close() }

// sseBody passes a call's event stream through until left bytes have been
// read, then ends the event in progress under a name go-sdk ignores and
// sends the call's JSON-RPC error as a last event. go-sdk fails the whole
// session on a malformed event, so the cut must stay well formed: ":" first
// makes whatever line was in progress a field go-sdk ignores (or a comment).
type sseBody struct {
	r    io.ReadCloser
	left int64
	req  *http.Request
	tail *bytes.Reader
}

func (b *sseBody) Read(p []byte) (int, error) {
	if b.tail != nil {
		return b.tail.Read(p)
	}
	if b.left <= 0 {
		msg := errorResponse(describe(b.req), Limit(b.req.Context()))
		b.tail = bytes.NewReader(append(append([]byte(":\nevent: skillport-refused\n\ndata: "), msg...), "\n\n"...))
		b.r.Close()
		return b.tail.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *sseBody) Close() error { return b.r.Close() }

// eventBody bounds each event of a long-lived stream to max bytes: the
// count starts again at every blank line. Past it, the stream ends with an
// error, which go-sdk treats as a dropped stream, not a broken session.
type eventBody struct {
	r    io.ReadCloser
	max  int64
	n    int64
	last byte
}

// ErrEventTooLarge ends a standalone event stream whose event went over
// its bound.
var ErrEventTooLarge = errors.New("an event of the server's stream is over " + strconv.Itoa(MaxMessage) + " bytes; stream dropped")

func (b *eventBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	for _, c := range p[:n] {
		if c == '\n' && b.last == '\n' {
			b.n = 0
		} else if c != '\r' {
			b.n++
		}
		if c != '\r' {
			b.last = c
		}
	}
	if b.n > b.max {
		return n, ErrEventTooLarge
	}
	return n, err
}

func (b *eventBody) Close() error { return b.r.Close() }

// CheckRedirect is the http.Client.CheckRedirect of every client that may
// carry a credential: a redirect to another origin (scheme, host or port)
// of a request that carries one (an Authorization, Proxy-Authorization or
// Cookie header, or a body, which a 307 or 308 sends again) is refused
// with an error naming both origins. net/http alone forwards such headers
// to the same host on another port or scheme (https to http: cleartext).
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	from := via[len(via)-1]
	if Origin(from.URL) == Origin(req.URL) {
		return nil
	}
	if carriesCredentials(req) {
		return fmt.Errorf("refused a redirect from %s to %s: it changes the origin, and the request carries credentials that must not leave %s; configure the URL it redirects to", Origin(from.URL), Origin(req.URL), Origin(via[0].URL))
	}
	return nil
}

func carriesCredentials(r *http.Request) bool {
	for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie"} {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// Origin returns u's origin, scheme://host:port with the scheme's default
// port filled in, lower-cased as URLs compare.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// NewClient returns an *http.Client with timeout whose answers are bounded
// ([Transport]) and whose redirects never carry a credential to another
// origin ([CheckRedirect]).
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: &Transport{}, CheckRedirect: CheckRedirect, Timeout: timeout}
}

// Guard returns c, or a copy of it whose redirects follow [CheckRedirect]
// when c has no policy of its own; nil gives NewClient(timeout). A caller's
// client must not forward a token across origins either.
func Guard(c *http.Client, timeout time.Duration) *http.Client {
	if c == nil {
		return NewClient(timeout)
	}
	if c.CheckRedirect != nil {
		return c
	}
	g := *c
	g.CheckRedirect = CheckRedirect
	return &g
}
