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
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
// (or takes the bytes package endpoint read) and parses it once
// ([message]); the thin path, the budget's charge, the routing and the
// endpoint's metrics label all work from that one parse, and go-sdk from
// the same bytes (its handler takes bytes, so its own decoding of a
// request it is handed is the one parse this package cannot spare); the entry shape
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
	// metas keeps what readMeta made of the _meta a client sends; nil:
	// nothing is kept.
	metas *metaCache
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

// message is one JSON-RPC message as this package reads it, parsed once
// (parse): what routing, the endpoint's metrics label, the budget's charge
// of a read and the thin path need of it. go-sdk, which takes bytes and not
// a parsed message, decodes a message it is handed once more itself.
type message struct {
	// parsed is whether the body is one JSON object, read strictly
	// (package jsonobj: valid UTF-8, no member named twice) with a string
	// method if any; everything below is from it.
	parsed bool
	method string          // unescaped; "" when absent
	id     json.RawMessage // as written; nil when absent
	params json.RawMessage // as written; nil when absent
	// pfields are the members of params and meta those of params._meta,
	// when they are objects (pobject, mobject).
	pfields, meta    []jsonobj.Field
	metaRaw          json.RawMessage // params._meta as written
	pobject, mobject bool
	metaVersion      bool   // params._meta names a protocol version
	uri              string // params.uri when it is a string without escapes
	hasURI           bool
	req              fastRequest
	fastOK           bool // req is a request the thin path may answer
}

// parse reads body into m, once: the one parse of a request body on its
// way through this package (the thin path declines what it does not
// understand rather than reading it another way). It declines, for the
// thin path, anything but a single call of one of its methods whose
// every member it knows: batches, notifications, responses, members it
// does not know, ids go-sdk would rewrite, escaped strings.
func (m *message) parse(body []byte) {
	fs, err := jsonobj.Fields(body)
	if err != nil {
		return
	}
	var version, plainMethod, unknown bool
	for _, f := range fs {
		switch f.Key {
		case "jsonrpc":
			version = string(f.Value) == `"2.0"`
		case "id":
			m.id = f.Value
		case "method":
			s, err := jsonobj.MemberString(f.Value)
			if err != nil {
				return // go-sdk refuses it; nothing to route or label by
			}
			m.method = s
			_, plainMethod = plainString(f.Value)
		case "params":
			m.params = f.Value
		default:
			unknown = true
		}
	}
	m.parsed = true
	if isObject(m.params) {
		// The members go on in the spare room of the top level's slice.
		if m.pfields, err = jsonobj.AppendMemberFields(fs[len(fs):], m.params); err == nil {
			m.pobject = true
		}
	}
	for _, f := range m.pfields {
		switch f.Key {
		case "uri":
			m.uri, m.hasURI = plainString(f.Value)
		case "_meta":
			if !isObject(f.Value) {
				continue
			}
			if m.meta, err = jsonobj.AppendMemberFields(m.pfields[len(m.pfields):], f.Value); err == nil {
				m.mobject, m.metaRaw = true, f.Value
			}
			for _, mf := range m.meta {
				m.metaVersion = m.metaVersion || mf.Key == mcp.MetaKeyProtocolVersion
			}
		}
	}
	if unknown || !version || !plainMethod || m.id == nil || !isFastMethod(m.method) {
		return
	}
	if m.req.id = echoID(m.id); m.req.id == nil || depth(body) > maxFastDepth {
		return
	}
	m.req.method, m.req.params = m.method, m.params
	m.fastOK = true
}

// modern reports whether the request follows the 2026-07-28 revision:
// server/discover and subscriptions/listen exist only there, and its
// requests carry their protocol version in _meta.
func (m *message) modern() bool {
	return m.metaVersion || m.method == "server/discover" || m.method == "subscriptions/listen"
}

// rpcID returns the request's id as go-sdk reads it, for an error
// answered before go-sdk sees the request; the null id when it has none.
func (m *message) rpcID() jsonrpc.ID {
	if m == nil || m.id == nil {
		return jsonrpc.ID{}
	}
	return rawID(m.id)
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

// readParams reads the parameters of m, a request the thin path may
// answer, as go-sdk and the handlers would, declining members it does not
// know. A session's request must not carry _meta (a progress token, say,
// asks for more than a result); a 2026-07-28 request must, naming
// v.version.
func readParams(m *message, v fastView) (fastParams, bool) {
	p := fastParams{init: v.init}
	method := m.req.method
	if m.params == nil {
		return p, method == wire.MethodListSkills && v.version == ""
	}
	if !m.pobject {
		return p, false
	}
	meta := false
	for _, f := range m.pfields {
		switch {
		case f.Key == "uri" && method != wire.MethodListSkills:
			if p.uri, p.hasURI = m.uri, m.hasURI; !p.hasURI {
				return p, false
			}
		case f.Key == "cursor" && (method == wire.MethodListSkills || method == wire.MethodReadDirectory):
			var ok bool
			if p.cursor, ok = plainString(f.Value); !ok {
				return p, false
			}
		case f.Key == "_meta" && v.version != "" && m.mobject:
			var ok bool
			if p.init, p.meta, ok = v.metas.read(m.metaRaw, m.meta, v.version); !ok {
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
	return p, method == wire.MethodListSkills || p.hasURI
}

// readMeta reads the members of the _meta of a 2026-07-28 request as
// go-sdk does, with go-sdk's own exported readers of it
// (ServerRequest.ClientCapabilities and ClientInfo, which decode what
// its validateRequestMeta decodes, the same way), accepting only what
// go-sdk surely accepts: a protocol version naming version, client
// capabilities, client info if any, and no other member. It returns the
// initialize params go-sdk makes of it and the capabilities as sent, for
// [declaredExtension]. Any capability set go-sdk reads is accepted:
// go-sdk's own client declares roots.
func readMeta(fs []jsonobj.Field, version string) (init *mcp.InitializeParams, meta mcp.Meta, ok bool) {
	sdk := make(mcp.Meta, len(fs))
	var caps json.RawMessage
	named := false // the protocol version
	for _, f := range fs {
		switch f.Key {
		case mcp.MetaKeyProtocolVersion:
			if s, ok := plainString(f.Value); !ok || s != version {
				return nil, nil, false
			}
			named = true
			continue
		case mcp.MetaKeyClientCapabilities:
			// declaredExtension reads the capabilities as sent with
			// encoding/json, which matches member names regardless of
			// case: one named like go-sdk's but for case would be read
			// two ways.
			if !plainCapabilities(f.Value) {
				return nil, nil, false
			}
			caps = f.Value
		case mcp.MetaKeyClientInfo:
		default:
			return nil, nil, false
		}
		// The generic value go-sdk's decoder makes of the member, which
		// its readers take.
		var v any
		if !strictDecode(f.Value, &v) {
			return nil, nil, false
		}
		sdk[f.Key] = v
	}
	if !named || caps == nil {
		return nil, nil, false
	}
	r := &mcp.ServerRequest[*mcp.ReadResourceParams]{Params: &mcp.ReadResourceParams{Meta: sdk}}
	init = &mcp.InitializeParams{ProtocolVersion: version, Capabilities: r.ClientCapabilities()}
	if init.Capabilities == nil {
		return nil, nil, false
	}
	if _, present := sdk[mcp.MetaKeyClientInfo]; present {
		if init.ClientInfo = r.ClientInfo(); init.ClientInfo == nil {
			return nil, nil, false
		}
	}
	return init, mcp.Meta{mcp.MetaKeyClientCapabilities: caps}, true
}

// metaCache keeps what readMeta made of a 2026-07-28 request's _meta, by
// its bytes: a client sends the same _meta with every request, and
// go-sdk's readers, which readMeta reuses, encode and decode each value
// again. What it keeps is shared and never modified.
type metaCache struct {
	mu sync.Mutex
	m  map[string]metaRead
}

type metaRead struct {
	version string // the revision the request was read in
	init    *mcp.InitializeParams
	meta    mcp.Meta
	ok      bool
}

// Bounds of a metaCache: a _meta longer than maxCachedMeta is read each
// time, and a cache of maxMetaCache entries starts over, so that a client
// sending ever different _meta costs only the reading.
const (
	maxCachedMeta = 1 << 10
	maxMetaCache  = 256
)

// read returns readMeta(fs, version) for raw, the _meta whose members
// are fs, from the cache when it holds it.
func (c *metaCache) read(raw json.RawMessage, fs []jsonobj.Field, version string) (*mcp.InitializeParams, mcp.Meta, bool) {
	if c == nil || len(raw) > maxCachedMeta {
		return readMeta(fs, version)
	}
	c.mu.Lock()
	r, hit := c.m[string(raw)]
	c.mu.Unlock()
	if hit && r.version == version {
		return r.init, r.meta, r.ok
	}
	r = metaRead{version: version}
	r.init, r.meta, r.ok = readMeta(fs, version)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxMetaCache {
		c.m = make(map[string]metaRead, 16)
	}
	c.m[string(raw)] = r
	c.mu.Unlock()
	return r.init, r.meta, r.ok
}

// readCapabilities decodes client capabilities, a member value package
// jsonobj checked, as go-sdk does, or reports false where go-sdk might
// read them otherwise (plainCapabilities).
func readCapabilities(raw json.RawMessage) (*mcp.ClientCapabilities, bool) {
	if !plainCapabilities(raw) {
		return nil, false
	}
	// go-sdk reads roots into a pointer to a struct of the same members
	// as ClientCapabilities.Roots: what decodes here decodes there.
	var caps mcp.ClientCapabilities
	if !strictDecode(raw, &caps) {
		return nil, false
	}
	return &caps, true
}

// plainCapabilities reports whether client capabilities, a member value
// package jsonobj checked, read alike with encoding/json and go-sdk's
// decoder: an object, no member named twice, none named like one of
// go-sdk's but for case (go-sdk's decoder matches names exactly,
// encoding/json does not), extensions an object.
func plainCapabilities(raw json.RawMessage) bool {
	fs, err := jsonobj.AppendMemberFields(nil, raw)
	if err != nil {
		return false
	}
	for _, f := range fs {
		switch strings.ToLower(f.Key) {
		case "experimental", "extensions", "roots", "sampling", "elicitation", "tasks":
			if f.Key != strings.ToLower(f.Key) {
				return false
			}
			if f.Key == "extensions" && !isObject(f.Value) {
				return false
			}
		}
	}
	return true
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
	loaded := "" // the skill a skills/get loads
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
		res, loaded = r, r.loaded
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
		out, ok := srv.fastEncoded(body, v)
		if ok {
			srv.loadedFile(ctx, snap, p.uri)
		}
		return out, ok
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
	srv.loaded(ctx, loaded)
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
