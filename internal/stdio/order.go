package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// order decides when [Transport.Answerer] may answer a line: after the
// session answered initialize with a result, and while no request handed
// to the session is unanswered. It follows the requests passed to the
// session and the responses the session writes.
type order struct {
	answerer func(json.RawMessage) func([]byte) io.WriterTo

	mu      sync.Mutex
	pending map[string]bool          // ids (as written) of requests handed to the session, unanswered
	initID  string                   // id of the initialize request, while unanswered
	init    json.RawMessage          // its params
	fast    func([]byte) io.WriterTo // the answerer, once initialize succeeded
	off     bool                     // a batch was seen: the ids of its responses are not followed
	idle    chan struct{}            // closed when pending next becomes empty, while someone waits
}

// wait returns once every request handed to the session was answered (or
// cancelled by the client), ctx is done, or after limit.
func (o *order) wait(ctx context.Context, limit time.Duration) {
	o.mu.Lock()
	if len(o.pending) == 0 {
		o.mu.Unlock()
		return
	}
	if o.idle == nil {
		o.idle = make(chan struct{})
	}
	idle := o.idle
	o.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-t.C:
	}
}

// settledLocked wakes a waiter once no request is pending.
func (o *order) settledLocked() {
	if len(o.pending) == 0 && o.idle != nil {
		close(o.idle)
		o.idle = nil
	}
}

// answer returns the answerer's response to line, or nil when the line
// goes to the session.
func (o *order) answer(line []byte, tooLong bool) io.WriterTo {
	if o == nil || tooLong {
		return nil
	}
	o.mu.Lock()
	fast := o.fast
	ready := fast != nil && !o.off && len(o.pending) == 0
	o.mu.Unlock()
	if !ready {
		return nil
	}
	return fast(line)
}

// check is [check], noting the requests handed to the session.
func (o *order) check(line []byte, tooLong bool, max int) (int, string) {
	code, msg, msgs := check(line, tooLong, max)
	if o == nil || code != 0 {
		return code, msg
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
		// The answers to a batch come as one array whose ids are not
		// followed: neither the answerer nor the end of input waits on them.
		o.off = true
		return 0, ""
	}
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		switch {
		case req.IsCall():
			key := idKey(req.ID)
			o.pending[key] = true
			if req.Method == "initialize" {
				o.initID, o.init = key, req.Params
			}
		case req.Method == "notifications/cancelled":
			// The client no longer waits for the request, which the
			// session may leave unanswered.
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
					delete(o.pending, idKey(id))
					o.settledLocked()
				}
			}
		}
	}
	return 0, ""
}

// sent notes a message the session writes: a response ends its request.
// It runs under the writer's lock, before the message is written, so an
// answer the filter sends next is written after it.
func (o *order) sent(p []byte) {
	id, result, ok := responseID(p)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.pending[id] {
		return
	}
	delete(o.pending, id)
	o.settledLocked()
	if id == o.initID {
		o.initID = ""
		if result && o.fast == nil && o.answerer != nil {
			o.fast = o.answerer(o.init)
		}
	}
}

// idKey is an id as go-sdk writes it.
func idKey(id jsonrpc.ID) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(id.Raw()); err != nil {
		return ""
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// responseID reads the id of a response as go-sdk writes one
// ({"jsonrpc":"2.0","id":ID,"result":... or "error":...), and whether it
// is a result; ok is false for anything else (requests, notifications).
func responseID(p []byte) (id string, result, ok bool) {
	rest, found := bytes.CutPrefix(p, []byte(`{"jsonrpc":"2.0","id":`))
	if !found || len(rest) == 0 {
		return "", false, false
	}
	end := 0
	if rest[0] == '"' {
		for end = 1; end < len(rest) && rest[end] != '"'; end++ {
			if rest[end] == '\\' {
				end++
			}
		}
		end++
	} else {
		for end < len(rest) && rest[end] != ',' {
			end++
		}
	}
	if end > len(rest) {
		return "", false, false
	}
	tail := rest[end:]
	switch {
	case bytes.HasPrefix(tail, []byte(`,"result":`)):
		return string(rest[:end]), true, true
	case bytes.HasPrefix(tail, []byte(`,"error":`)):
		return string(rest[:end]), false, true
	}
	return "", false, false
}
