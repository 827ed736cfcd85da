package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/host/skilluri"
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
func (a *Elicitation) Approve(ctx context.Context, req *approval.Request) (approval.Decision, error) {
	ss := SessionFrom(ctx)
	if req.Kind != approval.Load || !CanElicit(ss) {
		if a.Fallback == nil {
			return approval.Decision{}, nil
		}
		return a.Fallback.Approve(ctx, req)
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultElicitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
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
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{
		Mode:            "form",
		Message:         approvalMessage(req),
		RequestedSchema: map[string]any{"type": "object", "properties": props, "required": []string{"decision"}},
	})
	if err != nil {
		return approval.Decision{}, fmt.Errorf("asking the user through the client failed: %v", err)
	}
	if res.Action != "accept" {
		return approval.Decision{}, nil
	}
	d, _ := res.Content["decision"].(string)
	grant, _ := res.Content["grantAllowedTools"].(bool)
	switch d {
	case answerOnce:
		return approval.Decision{Allow: true, GrantTools: grant}, nil
	case answerAlways:
		return approval.Decision{Allow: true, Remember: !req.Dynamic, GrantTools: grant}, nil
	}
	return approval.Decision{}, nil
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
