package skillserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/budget"
)

// Large resources/read answers over HTTP. A file read is held in memory
// until the client has taken its answer, so a client that never reads
// holds it until the write deadline cuts it: the bytes such answers hold
// are charged to a budget shared by the whole server (package
// internal/budget) before the file is read, and on the thin path the
// content is encoded as it is written, so that an answer holds the file
// once rather than the file, its encoding and its framing.

// streamChunk is the content encoded per write: a multiple of 3, so that
// base64 chunks concatenate into the encoding of the whole.
const streamChunk = 48 << 10

// sdkReadCost is what go-sdk holds per byte of a file it answers: the
// content as a string, the result's JSON, the message's JSON and the
// event written.
const sdkReadCost = 5

// streamedRead is the resources/read result of a large file, its content
// to be encoded as it is written.
type streamedRead struct {
	head []byte // the result's JSON up to the content string's opening quote
	data []byte
	text bool
	tail []byte // the result's JSON from the content string's closing quote
}

// Placeholders for the content in the encoded result: plain ASCII, so
// that their encoding is known and found exactly once.
var (
	textSentinel = []byte("skillport-streamed-content-7d1e0c")
	blobSentinel = []byte("skillport-streamed-blob-9a4f")
)

// streamRead returns the resources/read result of f, whose bytes are data,
// in the pieces that, with data encoded between them, make exactly the
// bytes [Server.encodedRead] returns.
func (srv *Server) streamRead(uri string, f *catalog.File, data []byte) (*streamedRead, error) {
	text := f.Text && len(data) > 0
	sentinel, quoted := textSentinel, `"`+string(textSentinel)+`"`
	if !text {
		sentinel, quoted = blobSentinel, `"`+base64.StdEncoding.EncodeToString(blobSentinel)+`"`
	}
	b, err := marshal(srv.readResult(uri, f, sentinel), false)
	if err != nil {
		return nil, err
	}
	i := bytes.Index(b, []byte(quoted))
	if i < 0 || bytes.Contains(b[i+1:], []byte(quoted)) {
		return nil, errors.New("the content's place in the encoded result is ambiguous")
	}
	return &streamedRead{head: b[:i+1], data: data, text: text, tail: b[i+len(quoted)-1:]}, nil
}

// writeContent writes the content, encoded as encoding/json encodes it
// (text unescaped for HTML, blobs in standard base64), a chunk per write.
func (s *streamedRead) writeContent(w io.Writer) error {
	var buf []byte
	data := s.data
	for len(data) > 0 {
		n := min(len(data), streamChunk)
		if s.text {
			// Cut before a rune's first byte: text files are valid UTF-8,
			// so each chunk encodes as it does within the whole.
			for k := 0; k < utf8.UTFMax && n < len(data) && !utf8.RuneStart(data[n]); k++ {
				n--
			}
			b, err := marshal(string(data[:n]), false)
			if err != nil {
				return err
			}
			buf = b[1 : len(b)-1]
		} else {
			buf = base64.StdEncoding.AppendEncode(buf[:0], data[:n])
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// budgetFor returns the byte budget r is charged to: the one its context
// carries (package endpoint puts the server's there), else h's own.
func (h *HTTPHandler) budgetFor(r *http.Request) *budget.Budget {
	if b, ok := budget.FromContext(r.Context()); ok {
		return b
	}
	return h.budget
}

// callerContext returns ctx naming the caller of the verified token
// token, unless the transport already named one.
func callerContext(ctx context.Context, token *auth.TokenInfo) context.Context {
	if token != nil && CallerFromContext(ctx) == nil {
		return ContextWithCaller(ctx, CallerFromToken(token))
	}
	return ctx
}

// largeFile returns the file uri names in the caller's view when the
// server answers its reads and it is large enough to be charged to the
// budget.
func (srv *Server) largeFile(ctx context.Context, uri string) *catalog.File {
	if !srv.owns(uri) || srv.compatResource(uri) {
		return nil
	}
	snap, err := srv.snapshot(ctx)
	if err != nil || snap == nil {
		return nil
	}
	if f := snap.File(uri); f != nil && f.Size >= budget.Small {
		return f
	}
	return nil
}

// serveLargeRead answers a thin-path resources/read of a large file:
// charged to the budget, then written as it is encoded. It reports false,
// having written nothing, for fastResult (a small file) or go-sdk (an
// error) to answer.
func (h *HTTPHandler) serveLargeRead(w http.ResponseWriter, r *http.Request, req fastRequest, p fastParams, v fastView) bool {
	srv := h.fast
	ctx := callerContext(r.Context(), v.token)
	f := srv.largeFile(ctx, p.uri)
	if f == nil {
		return false
	}
	release, err := h.budgetFor(r).Acquire(ctx, f.Size+2*streamChunk)
	if err != nil {
		h.busy(w, r, rawID(req.id), err)
		return true
	}
	defer release()
	m, ok := srv.largeReadMessage(ctx, "event: message\ndata: ", req.id, p.uri, v, "\n\n")
	if !ok {
		return false
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-cache, no-transform")
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	// A write error means the client is gone or too slow.
	m.WriteTo(w)
	return true
}

// streamedMessage is a response to a resources/read of a large file,
// its content encoded as it is written.
type streamedMessage struct {
	head []byte // the framing's prefix and the message up to the content
	sr   *streamedRead
	end  []byte // the message from the content on, and the framing's suffix
}

// largeReadMessage returns the response to a thin-path resources/read of
// uri, a large file in the caller's view, framed by prefix and suffix, in
// the pieces that, with the content encoded between them, make exactly
// the message fastResult would; ok is false, and the file was not
// counted as served, for go-sdk to answer (an error).
func (srv *Server) largeReadMessage(ctx context.Context, prefix string, id []byte, uri string, v fastView, suffix string) (*streamedMessage, bool) {
	snap, f, data, err := srv.readFile(ctx, uri)
	if err != nil {
		return nil, false
	}
	sr, err := srv.streamRead(uri, f, data)
	if err != nil {
		return nil, false
	}
	head := [][]byte{sr.head}
	if v.version != "" {
		// The result with go-sdk's _meta, which encoding/json writes first.
		meta, err := srv.serverInfoMeta()
		if err != nil {
			return nil, false
		}
		head = [][]byte{meta, sr.head[1:]}
	}
	srv.fast.Add(1)
	srv.loadedFile(ctx, snap, uri)
	// The message without its closing brace, then the content, then the
	// rest.
	msg := fastMessage(prefix, id, head, "")
	return &streamedMessage{head: msg[:len(msg)-1], sr: sr, end: append(append(sr.tail[:len(sr.tail):len(sr.tail)], '}'), suffix...)}, true
}

// WriteTo writes the message, a chunk of content per write.
func (m *streamedMessage) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	if _, err := cw.Write(m.head); err != nil {
		return cw.n, err
	}
	if err := m.sr.writeContent(cw); err != nil {
		return cw.n, err
	}
	_, err := cw.Write(m.end)
	return cw.n, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// rawID returns the JSON-RPC id of its encoding, or the null id.
func rawID(raw []byte) jsonrpc.ID {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return jsonrpc.ID{}
	}
	id, _ := jsonrpc.MakeID(v)
	return id
}

// chargeSDK charges a resources/read of a large file that go-sdk will
// answer to the budget, for as long as the request is served; release
// gives it back. When the budget stays spent, it answers 503 itself and
// reports false.
func (h *HTTPHandler) chargeSDK(w http.ResponseWriter, r *http.Request, m *message) (func(), bool) {
	nothing := func() {}
	// m is the body ServeHTTP parsed once (nil when it could not be read
	// whole, which go-sdk then refuses).
	if h.fast == nil || m == nil || m.method != "resources/read" || !m.hasURI {
		return nothing, true
	}
	ctx := callerContext(r.Context(), auth.TokenInfoFromContext(r.Context()))
	f := h.fast.largeFile(ctx, m.uri)
	if f == nil {
		return nothing, true
	}
	release, err := h.budgetFor(r).Acquire(ctx, sdkReadCost*f.Size)
	if err != nil {
		h.busy(w, r, m.rpcID(), err)
		return nil, false
	}
	return release, true
}

// busy answers a request whose large answer found the budget spent (or
// whose client left while it waited).
func (h *HTTPHandler) busy(w http.ResponseWriter, r *http.Request, id jsonrpc.ID, err error) {
	if r.Context().Err() != nil {
		return // nobody to answer
	}
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("%v; retry shortly", err)})
}
