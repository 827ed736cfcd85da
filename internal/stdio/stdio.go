// Package stdio is the MCP stdio transport for skillport's servers (serve,
// gateway), with one difference from go-sdk's: a line that is not a
// JSON-RPC message is answered with a JSON-RPC error and dropped, and the
// server keeps serving. go-sdk ends the session on the first such line, so
// one stray line from a client (a debug print, a half-written message)
// took the whole server down.
package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLine bounds one inbound line, as go-sdk's stdio transport does:
// a longer line is answered with -32700 and skipped without being held in
// memory.
const DefaultMaxLine = mcp.DefaultMaxLineLength

// JSON-RPC error codes for lines that are not messages.
const (
	CodeParseError     = -32700 // not JSON, or longer than MaxLine
	CodeInvalidRequest = -32600 // JSON, but not a JSON-RPC 2.0 message
)

// Transport speaks newline-delimited JSON-RPC on In and Out.
type Transport struct {
	In  io.Reader
	Out io.Writer
	// MaxLine bounds one inbound line in bytes; 0 means DefaultMaxLine.
	MaxLine int
	// Answerer, when set, lets the server answer some requests without
	// the MCP session (a thin path for cheap, read-only methods). It is
	// called once, with the params of the connection's initialize request,
	// after a result to it was sent; the function it returns (nil for
	// none) is offered each later line, and returns the complete response
	// to send (its line and newline, written with one WriteTo: a large
	// answer may write itself in pieces as it encodes them; see [Line]),
	// or nil to hand the line to the session.
	//
	// Ordering: a line is offered only while every request handed to the
	// session has been answered (or cancelled by the client). go-sdk
	// answers requests concurrently and in any order, so a client cannot
	// rely on more than this; but a client that waits for nothing still
	// sees nothing it sent later overtake a request it sent earlier.
	Answerer func(initialize json.RawMessage) func(line []byte) io.WriterTo
	// Drain bounds how long the end of In waits for the answers to the
	// requests read before it; 0 means DefaultDrain.
	Drain time.Duration
}

// DefaultDrain is how long the end of the input waits for the session to
// answer the requests read before it. A client that pipes its requests
// and closes its end expects every answer (the TypeScript SDK's server
// gives them); the session ends only once they are written, or after this
// long for a handler that never returns.
const DefaultDrain = 30 * time.Second

// Connect starts reading In. Valid messages go to the MCP session
// unchanged; anything else is answered on Out.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	max := t.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	pr, pw := io.Pipe()
	out := &lockedWriter{w: t.Out}
	// The requests handed to the session are always followed: the end of
	// the input waits for their answers before it ends the session.
	st := &order{answerer: t.Answerer, pending: map[string]bool{}}
	out.seen = st.sent
	drain := t.Drain
	if drain <= 0 {
		drain = DefaultDrain
	}
	go func() {
		err := filter(t.In, pw, out, max, st)
		if err == nil {
			st.wait(ctx, drain)
		}
		pw.CloseWithError(err)
	}()
	return (&mcp.IOTransport{Reader: pr, Writer: out, MaxLineLength: max + 1}).Connect(ctx)
}

// filter copies message lines from in to pass and answers the others on
// out. It returns when in ends.
func filter(in io.Reader, pass io.Writer, out *lockedWriter, max int, st *order) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for n := 1; ; n++ {
		line, tooLong, err := readLine(r, max)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			if answer := st.answer(line, tooLong); answer != nil {
				if werr := out.writeAnswer(answer); werr != nil {
					return werr
				}
			} else if code, msg := st.check(line, tooLong, max); code != 0 {
				if werr := reply(out, code, fmt.Sprintf("line %d: %s", n, msg)); werr != nil {
					return werr
				}
			} else if _, werr := pass.Write(append(line, '\n')); werr != nil {
				return werr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// readLine reads one line without its newline. A line longer than max is
// consumed and discarded: it returns tooLong and no data.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r")), tooLong, err
	}
}

// check returns 0 and the messages of a JSON-RPC message or batch, else
// the error code and why.
func check(line []byte, tooLong bool, max int) (int, string, []jsonrpc.Message) {
	switch {
	case tooLong:
		return CodeParseError, fmt.Sprintf("longer than %d bytes; skipped", max), nil
	case !json.Valid(line):
		var v any
		err := json.Unmarshal(line, &v)
		return CodeParseError, fmt.Sprintf("not JSON (%v); send one JSON-RPC message per line", err), nil
	}
	raws := []json.RawMessage{line}
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
		if err := json.Unmarshal(line, &raws); err != nil || len(raws) == 0 {
			return CodeInvalidRequest, "an empty or malformed batch", nil
		}
	}
	msgs := make([]jsonrpc.Message, len(raws))
	for i, m := range raws {
		var err error
		if msgs[i], err = jsonrpc.DecodeMessage(m); err != nil {
			return CodeInvalidRequest, fmt.Sprintf("not a JSON-RPC 2.0 message: %v", err), nil
		}
	}
	return 0, "", msgs
}

// reply writes a JSON-RPC error with a null id: the id of a line that is
// not a message cannot be known.
func reply(out io.Writer, code int, msg string) error {
	data, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	if err != nil {
		return err
	}
	_, err = out.Write(append(data, '\n'))
	return err
}

// lockedWriter serialises whole writes: go-sdk writes each message with
// one Write, and so does reply, so lines never interleave.
type lockedWriter struct {
	mu   sync.Mutex
	w    io.Writer
	seen func([]byte) // told of each message written, when set
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen != nil {
		l.seen(p)
	}
	return l.w.Write(p)
}

// writeAnswer writes an answerer's response, in as many writes as it
// makes, with no message of the session's between them. The session never
// waits on such a response, so it is not shown to seen.
func (l *lockedWriter) writeAnswer(a io.WriterTo) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := a.WriteTo(l.w)
	return err
}

// Line is a response an [Transport.Answerer] holds whole: its WriteTo
// writes it in one write, with its newline.
type Line []byte

// WriteTo writes the line and, unless it ends with one, a newline.
func (b Line) WriteTo(w io.Writer) (int64, error) {
	if !bytes.HasSuffix(b, []byte("\n")) {
		b = append(b[:len(b):len(b)], '\n')
	}
	n, err := w.Write(b)
	return int64(n), err
}

// Close does not close the underlying writer (stdout outlives a session).
func (l *lockedWriter) Close() error { return nil }
