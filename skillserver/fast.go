package skillserver

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/wire"
)

// The thin read path. resources/read, skills/get, skills/list and
// resources/directory/read are pure functions of (snapshot, request,
// caller): the server answers them from the snapshot and sends bytes it
// encoded once. Going through go-sdk costs
// far more than that answer: each request is decoded several times (each
// decode allocates a large buffer) and each result is encoded twice. So
// the transports of this package ([Server.HTTPHandler], the stdio transport of
// [Server.Transport]) hand a request of one of these methods to the thin
// path first; it answers with exactly the bytes go-sdk would send, or
// declines, and go-sdk answers as always.
//
// Each request is decided once: the HTTP handler reads a POST body once
// (or takes the bytes package endpoint read), splits it once, and the thin
// path, the routing and go-sdk all work from those bytes; the entry shape
// of skills/list is chosen by the slow path's own [declaredExtension],
// from what go-sdk's session knows of the client (a stateless request of
// an older revision: initialized, no capabilities). Its state hangs off
// the [Server] and [HTTPHandler] it belongs to.
//
// The thin path answers only what it is sure of: a single, well-formed
// request, every member of which it knows, on a connection go-sdk would
// serve it on, with a result (never an error). Everything else, errors
// included, falls through to go-sdk, so that errors are go-sdk's and ours
// exactly as before, and nothing the thin path does not understand is
// ever answered differently.

// fastView is what a thin-path answer depends on beside the request and
// the snapshot.
type fastView struct {
	// version is the revision the request is served in: a 2026-07-28
	// request carries it in _meta, which must then name it, and its
	// result names the server in _meta. Empty means a request of an
	// older revision (of a session, or to a stateless server).
	version string
	// init is the client as go-sdk's session knows it: its initialize
	// params, or the ones go-sdk synthesizes (no capabilities) for an
	// older revision's request to a stateless server. A 2026-07-28
	// request brings its own in _meta (fastParams.init).
	init *mcp.InitializeParams
	// token is the request's verified bearer token, if any: it names the
	// caller whose view of the skills answers.
	token *auth.TokenInfo
}

// fastRequest is a JSON-RPC request as the thin path reads it.
type fastRequest struct {
	id     []byte // as it is echoed: an integer or a string without escapes
	method string
	params json.RawMessage // nil when absent
}

// isFastMethod reports whether the thin path may answer method.
func isFastMethod(method string) bool {
	switch method {
	case "resources/read", wire.MethodGetSkill, wire.MethodListSkills, wire.MethodReadDirectory:
		return true
	}
	return false
}

// maxFastDepth is the deepest nesting the thin path reads; go-sdk refuses
// input nested deeper than 1000 levels, so anything near that falls
// through to it.
const maxFastDepth = 64

// parseFast reads body as one JSON-RPC request the thin path may answer.
// It declines anything else: batches, notifications, responses, members it
// does not know, ids go-sdk would rewrite, escaped strings.
func parseFast(body []byte) (fastRequest, bool) {
	var req fastRequest
	if len(body) == 0 || depth(body) > maxFastDepth {
		return req, false
	}
	fs, err := jsonobj.Fields(body)
	if err != nil {
		return req, false
	}
	var version, method bool
	for _, f := range fs {
		switch f.Key {
		case "jsonrpc":
			version = string(f.Value) == `"2.0"`
		case "id":
			if req.id = echoID(f.Value); req.id == nil {
				return req, false
			}
		case "method":
			s, ok := plainString(f.Value)
			if !ok {
				return req, false
			}
			req.method, method = s, true
		case "params":
			req.params = f.Value
		default:
			return req, false
		}
	}
	return req, version && method && req.id != nil && isFastMethod(req.method)
}

// echoID returns the id as go-sdk echoes it, or nil for an id it would not
// echo byte for byte: go-sdk reads numbers as float64 and writes integers,
// so only integers it represents exactly, written canonically, qualify.
func echoID(raw json.RawMessage) []byte {
	if s, ok := plainString(raw); ok {
		b, err := marshal(s, false)
		if err != nil {
			return nil
		}
		return b
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) || strconv.FormatInt(n, 10) != string(raw) {
		return nil
	}
	return raw
}

// plainString decodes a JSON string without escapes, which every decoder
// reads the same way.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// depth returns how deeply data nests, strings aside.
func depth(data []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, b := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			d++
			deepest = max(deepest, d)
		case b == '}' || b == ']':
			d--
		}
	}
	return deepest
}

// fastParams are the parameters of a thin-path request.
type fastParams struct {
	uri, cursor string
	hasURI      bool
	// init and meta are the client as a 2026-07-28 request's _meta
	// describes it: what go-sdk makes of it, and its capabilities as
	// sent; for an older revision, init is the view's and meta nil.
	init *mcp.InitializeParams
	meta mcp.Meta
}

// readParams reads the parameters of req as go-sdk and the handlers
// would, declining members it does not know. A session's request must not
// carry _meta (a progress token, say, asks for more than a result); a
// 2026-07-28 request must, naming v.version.
func readParams(req fastRequest, v fastView) (fastParams, bool) {
	p := fastParams{init: v.init}
	if req.params == nil {
		return p, req.method == wire.MethodListSkills && v.version == ""
	}
	fs, err := jsonobj.Fields(req.params)
	if err != nil {
		return p, false
	}
	meta := false
	for _, f := range fs {
		switch {
		case f.Key == "uri" && req.method != wire.MethodListSkills:
			if p.uri, p.hasURI = plainString(f.Value); !p.hasURI {
				return p, false
			}
		case f.Key == "cursor" && (req.method == wire.MethodListSkills || req.method == wire.MethodReadDirectory):
			var ok bool
			if p.cursor, ok = plainString(f.Value); !ok {
				return p, false
			}
		case f.Key == "_meta" && v.version != "":
			var ok bool
			if p.init, p.meta, ok = readMeta(f.Value, v.version); !ok {
				return p, false
			}
			meta = true
		default:
			return p, false
		}
	}
	if v.version != "" && !meta {
		return p, false
	}
	return p, req.method == wire.MethodListSkills || p.hasURI
}

// readMeta checks the _meta of a 2026-07-28 request as go-sdk does
// (protocol version, client info, client capabilities: validateRequestMeta
// in go-sdk, which exports no such check), accepting only what go-sdk
// surely accepts, and returns the initialize params go-sdk makes of it
// and the capabilities as sent, for [declaredExtension]. Any capability
// set go-sdk's types read is accepted: go-sdk's own client declares roots.
func readMeta(raw json.RawMessage, version string) (init *mcp.InitializeParams, meta mcp.Meta, ok bool) {
	fs, err := jsonobj.Fields(raw)
	if err != nil {
		return nil, nil, false
	}
	init = &mcp.InitializeParams{}
	var caps json.RawMessage
	for _, f := range fs {
		switch f.Key {
		case mcp.MetaKeyProtocolVersion:
			s, ok := plainString(f.Value)
			if !ok || s != version {
				return nil, nil, false
			}
			init.ProtocolVersion = s
		case mcp.MetaKeyClientInfo:
			if !isObject(f.Value) || !strictDecode(f.Value, &init.ClientInfo) {
				return nil, nil, false
			}
		case mcp.MetaKeyClientCapabilities:
			if init.Capabilities, ok = readCapabilities(f.Value); !ok {
				return nil, nil, false
			}
			caps = f.Value
		default:
			return nil, nil, false
		}
	}
	if init.ProtocolVersion == "" || caps == nil {
		return nil, nil, false
	}
	return init, mcp.Meta{mcp.MetaKeyClientCapabilities: caps}, true
}

// readCapabilities decodes client capabilities as go-sdk does, or reports
// false where go-sdk might read them otherwise: not an object, a member
// named twice, or a member named like one of go-sdk's but for case
// (go-sdk's decoder matches names exactly, encoding/json does not).
func readCapabilities(raw json.RawMessage) (*mcp.ClientCapabilities, bool) {
	fs, err := jsonobj.Fields(raw)
	if err != nil {
		return nil, false
	}
	for _, f := range fs {
		switch strings.ToLower(f.Key) {
		case "experimental", "extensions", "roots", "sampling", "elicitation", "tasks":
			if f.Key != strings.ToLower(f.Key) {
				return nil, false
			}
			if f.Key == "extensions" && !isObject(f.Value) {
				return nil, false
			}
		}
	}
	// go-sdk reads roots into a pointer to a struct of the same members
	// as ClientCapabilities.Roots: what decodes here decodes there.
	var caps mcp.ClientCapabilities
	if !strictDecode(raw, &caps) {
		return nil, false
	}
	return &caps, true
}

// isObject reports whether raw, valid JSON, is an object.
func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }

// strictDecode decodes raw into v with encoding/json, whose errors are a
// superset of go-sdk's decoder's on the values the thin path reads (it
// also matches member names regardless of case, which callers rule out
// where it matters).
func strictDecode(raw json.RawMessage, v any) bool {
	return json.Unmarshal(raw, v) == nil
}

// fastResult returns the encoded result of a request of method with
// params p (from [readParams]), exactly as go-sdk would encode it, in
// pieces to be sent one after the other, or false when go-sdk must
// answer: its answer is an error.
func (srv *Server) fastResult(ctx context.Context, method string, p fastParams, v fastView) ([][]byte, bool) {
	ctx = callerContext(ctx, v.token) // as withCaller: a caller the transport already named stays
	var res interface{ SetMeta(map[string]any) }
	switch method {
	case wire.MethodListSkills:
		// The entry shape is chosen by the slow path's own function, from
		// what go-sdk's session would know of the client.
		r, err := srv.listAny(ctx, p.init, &wire.ListSkillsParams{ParamsBase: mcp.ParamsBase{Meta: p.meta}, Cursor: p.cursor})
		if err != nil {
			return nil, false
		}
		if r.page != nil {
			return srv.fastEncoded(r.page, v)
		}
		res = r
	case wire.MethodGetSkill:
		r, err := srv.getAny(ctx, &wire.GetParams{URI: &p.uri})
		if err != nil {
			return nil, false
		}
		res = r
	case wire.MethodReadDirectory:
		if !srv.ext {
			return nil, false // not served: go-sdk says so
		}
		r, err := srv.readDirectory(ctx, &wire.ReadDirectoryParams{URI: p.uri, Cursor: p.cursor})
		if err != nil {
			return nil, false
		}
		res = r
	default: // resources/read
		if !srv.owns(p.uri) || srv.compatResource(p.uri) {
			return nil, false
		}
		snap, f, data, err := srv.readFile(ctx, p.uri)
		if err != nil {
			return nil, false
		}
		body, err := srv.encodedRead(snap, p.uri, f, data)
		if err != nil {
			return nil, false
		}
		return srv.fastEncoded(body, v)
	}
	if v.version != "" {
		// go-sdk names the server in every result of a 2026-07-28 request.
		res.SetMeta(map[string]any{mcp.MetaKeyServerInfo: srv.impl})
	}
	var data []byte
	var err error
	if m, ok := res.(json.Marshaler); ok {
		// What go-sdk's encoder does with a Marshaler's output is compact
		// it, and ours write compact JSON already: skip the second pass
		// over a result that can be a large skills/list page.
		data, err = m.MarshalJSON()
	} else {
		data, err = marshal(res, false)
	}
	if err != nil {
		return nil, false
	}
	srv.fast.Add(1)
	return [][]byte{data}, true
}

// fastEncoded returns body, an encoded result without _meta, as the
// thin path sends it for a request viewed as v: unchanged for a session,
// in pieces with go-sdk's _meta first for a 2026-07-28 request, never
// copied.
func (srv *Server) fastEncoded(body []byte, v fastView) ([][]byte, bool) {
	if v.version == "" {
		srv.fast.Add(1)
		return [][]byte{body}, true
	}
	// The result with go-sdk's _meta, which encoding/json writes first.
	meta, err := srv.serverInfoMeta()
	if err != nil {
		return nil, false
	}
	srv.fast.Add(1)
	return [][]byte{meta, body[1:]}, true
}

// serverInfoMeta returns `{"_meta":{<server info>},`, how a result of a
// 2026-07-28 request starts.
func (srv *Server) serverInfoMeta() ([]byte, error) {
	if b := srv.metaHead.Load(); b != nil {
		return *b, nil
	}
	m, err := marshal(mcp.Meta{mcp.MetaKeyServerInfo: srv.impl}, false)
	if err != nil {
		return nil, err
	}
	b := append(append([]byte(`{"_meta":`), m...), ',')
	srv.metaHead.Store(&b)
	return b, nil
}

// Bounds of the encoded resources/read results kept per snapshot.
const (
	maxCachedRead = 64 << 10 // largest file whose result is kept
	maxReadCache  = 4 << 20  // bytes of results kept
)

// readCache holds encoded resources/read results of one snapshot: a
// result is a pure function of the file's URI and verified content, and
// the content is still read (and checked against its digest) on every
// request, so a file changed on disk is noticed as before.
type readCache struct {
	snap string
	mu   sync.Mutex
	m    map[string][]byte
	size int
}

// encodedRead returns the JSON of the resources/read result of f, a file
// of snap whose bytes are data, as go-sdk encodes it (without _meta).
func (srv *Server) encodedRead(snap published.Snapshot, uri string, f *catalog.File, data []byte) ([]byte, error) {
	c := srv.reads.Load()
	if c == nil || c.snap != snap.ID() {
		c = &readCache{snap: snap.ID(), m: map[string][]byte{}}
		srv.reads.Store(c)
	}
	c.mu.Lock()
	b, ok := c.m[uri]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(data)*4/3 + len(uri) + 256) // base64 or escapes
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(srv.readResult(uri, f, data)); err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(data) <= maxCachedRead {
		c.mu.Lock()
		if _, ok := c.m[uri]; !ok && c.size+len(b) <= maxReadCache {
			c.m[uri] = bytes.Clone(b) // without the encoder's spare capacity
			c.size += len(b)
		}
		c.mu.Unlock()
	}
	return b, nil
}

// fastMessage returns the JSON-RPC response carrying result, as go-sdk
// writes it, between prefix and suffix (the transport's framing), in one
// allocation.
func fastMessage(prefix string, id []byte, result [][]byte, suffix string) []byte {
	return appendMessage(nil, prefix, id, result, suffix)
}

// appendMessage appends what fastMessage returns to dst, growing it once.
func appendMessage(dst []byte, prefix string, id []byte, result [][]byte, suffix string) []byte {
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	n := len(prefix) + len(head) + len(id) + len(mid) + 1 + len(suffix)
	for _, r := range result {
		n += len(r)
	}
	b := slices.Grow(dst, n)
	b = append(b, prefix...)
	b = append(b, head...)
	b = append(b, id...)
	b = append(b, mid...)
	for _, r := range result {
		b = append(b, r...)
	}
	b = append(b, '}')
	return append(b, suffix...)
}
