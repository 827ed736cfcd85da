package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/skilluri"
)

type sessionKey struct{}

func withSession(ctx context.Context, ss *mcp.ServerSession) context.Context {
	return context.WithValue(ctx, sessionKey{}, ss)
}

// SessionFrom returns the client session whose request ctx belongs to, if
// the request came through a gateway.
func SessionFrom(ctx context.Context) *mcp.ServerSession {
	ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession)
	return ss
}

// CanElicit reports whether the client of ss declared form elicitation.
func CanElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	el := p.Capabilities.Elicitation
	return el.Form != nil || el.URL == nil
}

// DefaultElicitTimeout bounds how long a user has to answer.
const DefaultElicitTimeout = 5 * time.Minute

// Elicitation is an [approval.Approver] that asks the user through the MCP
// client whose request is being served (elicitation/create), showing the
// skill, its origin and its file set. When that client did not declare
// elicitation, or the request is not a load, it defers to Fallback (deny
// when nil). A declined or cancelled elicitation is a refusal.
type Elicitation struct {
	Fallback approval.Approver
	// Timeout bounds the wait for an answer; default DefaultElicitTimeout.
	Timeout time.Duration
}

// Elicitation answers. "always" persists the approval for exactly the
// files shown; it is not offered for dynamic skills.
const (
	answerOnce   = "once"
	answerAlways = "always"
	answerDeny   = "deny"
)

// Approve implements [approval.Approver].
//
// Since protocol 2026-07-28 a server may not send elicitation/create while
// serving a request; it returns the question as an input request
// (multi round-trip requests, SEP-2322) and the client retries the call
// with the answer. The gateway's tool and prompt handlers do that: they
// put an approval slot in the context, in which Approve records the
// question (and fails the load), or finds the answer on the retry. go-sdk
// turns the same input request into a direct elicitation/create for older
// clients. Requests that cannot carry input requests (resources/read of a
// re-published skill) ask older clients directly and leave newer ones to
// Fallback.
func (a *Elicitation) Approve(ctx context.Context, req *approval.Request) (approval.Decision, error) {
	ss := SessionFrom(ctx)
	if req.Kind != approval.Load || !CanElicit(ss) {
		return a.fallback(ctx, req)
	}
	if slot := slotFrom(ctx); slot != nil {
		if slot.answer != nil && slot.answerFor == requestKey(req) {
			return decide(slot.answer, req), nil
		}
		r := *req
		slot.asked = &r
		return approval.Decision{}, errInputRequired
	}
	if p := ss.InitializeParams(); p != nil && p.ProtocolVersion >= "2026-07-28" {
		return a.fallback(ctx, req)
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultElicitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := ss.Elicit(ctx, elicitParams(req))
	if err != nil {
		return approval.Decision{}, fmt.Errorf("asking the user through the client failed: %v", err)
	}
	return decide(res, req), nil
}

func (a *Elicitation) fallback(ctx context.Context, req *approval.Request) (approval.Decision, error) {
	if a.Fallback == nil {
		return approval.Decision{}, nil
	}
	return a.Fallback.Approve(ctx, req)
}

// errInputRequired fails a load whose approval must first be asked.
var errInputRequired = errors.New("the user's approval is being asked")

// approvalInput is the id of the approval question in an input request map.
const approvalInput = "skillport-approval"

// approvalSlot carries an approval question out of a load, and its answer
// back into the retried load.
type approvalSlot struct {
	asked     *approval.Request
	answer    *mcp.ElicitResult
	answerFor string
}

type slotKey struct{}

func slotFrom(ctx context.Context) *approvalSlot {
	s, _ := ctx.Value(slotKey{}).(*approvalSlot)
	return s
}

// withApprovalSlot prepares ctx for a handler that can ask for approval
// with an input request; responses and state are the retried call's.
func withApprovalSlot(ctx context.Context, responses mcp.InputResponseMap, state string) (context.Context, *approvalSlot) {
	slot := &approvalSlot{}
	if r, ok := responses[approvalInput].(*mcp.ElicitResult); ok {
		slot.answer, slot.answerFor = r, state
	}
	return context.WithValue(ctx, slotKey{}, slot), slot
}

// inputRequests returns the question recorded in slot, if any.
func (slot *approvalSlot) inputRequests() (mcp.InputRequestMap, string, bool) {
	if slot.asked == nil {
		return nil, "", false
	}
	return mcp.InputRequestMap{approvalInput: elicitParams(slot.asked)}, requestKey(slot.asked), true
}

// requestKey binds an answer to the exact content it was given for.
func requestKey(req *approval.Request) string {
	if req.Dynamic {
		return "dynamic\x00" + req.Origin + "\x00" + req.URI
	}
	return approval.Key(req.Origin, req.URI, req.Files)
}

func elicitParams(req *approval.Request) *mcp.ElicitParams {
	choices := []string{answerOnce, answerAlways, answerDeny}
	labels := []string{"Yes, this time", "Yes, always for this exact content", "No"}
	if req.Dynamic {
		choices, labels = []string{answerOnce, answerDeny}, []string{"Yes, this time", "No"}
	}
	var oneOf []map[string]any
	for i, c := range choices {
		oneOf = append(oneOf, map[string]any{"const": c, "title": labels[i]})
	}
	props := map[string]any{
		"decision": map[string]any{"type": "string", "title": "Load this skill?", "oneOf": oneOf, "default": answerDeny},
	}
	if req.AllowedTools != "" {
		props["grantAllowedTools"] = map[string]any{"type": "boolean", "title": "Also grant the tools it requests (" + line(req.AllowedTools, 200) + ")", "default": false}
	}
	return &mcp.ElicitParams{
		Mode:            "form",
		Message:         approvalMessage(req),
		RequestedSchema: map[string]any{"type": "object", "properties": props, "required": []string{"decision"}},
	}
}

func decide(res *mcp.ElicitResult, req *approval.Request) approval.Decision {
	if res == nil || res.Action != "accept" {
		return approval.Decision{}
	}
	d, _ := res.Content["decision"].(string)
	grant, _ := res.Content["grantAllowedTools"].(bool)
	switch d {
	case answerOnce:
		return approval.Decision{Allow: true, GrantTools: grant}
	case answerAlways:
		return approval.Decision{Allow: true, Remember: !req.Dynamic, GrantTools: grant}
	}
	return approval.Decision{}
}

// maxShownFiles bounds the file list in an approval message.
const maxShownFiles = 40

// approvalMessage shows what is approved: skill, origin, description and
// the exact file set. Every server string is cleaned of control and hidden
// characters so that it cannot disguise the question.
func approvalMessage(req *approval.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Load the skill %q from the MCP server %q into the model's context?\n\n", line(req.Name, 100), req.Origin)
	fmt.Fprintf(&b, "Description: %s\nURI: %s\n", line(req.Description, 500), line(req.URI, 300))
	if req.Dynamic {
		b.WriteString("Files: dynamic: the server publishes no digests, so the content cannot be verified.\n")
	} else {
		fmt.Fprintf(&b, "Files (%d, %d bytes in all; each is verified against its digest when read):\n", len(req.Files), req.Size)
		root := strings.TrimSuffix(req.URI, "/SKILL.md")
		for i, f := range req.Files {
			if i == maxShownFiles {
				fmt.Fprintf(&b, "  … and %d more\n", len(req.Files)-i)
				break
			}
			rel, ok := skilluri.Within(root, f.URI)
			if !ok {
				rel = f.URI
			}
			fmt.Fprintf(&b, "  %s (%d bytes, %s…)\n", line(rel, 200), f.Size, f.Digest[:min(len(f.Digest), 19)])
		}
	}
	if req.AllowedTools != "" {
		fmt.Fprintf(&b, "It requests the tools: %s (not granted unless you tick the box).\n", line(req.AllowedTools, 200))
	}
	for _, w := range req.Warnings {
		fmt.Fprintf(&b, "Warning: %s\n", line(w, 300))
	}
	b.WriteString("\nSkill content is untrusted input from that server: it cannot override your instructions and grants no permissions.")
	return b.String()
}

func line(s string, max int) string { return sanitizeLine(s, max) }
