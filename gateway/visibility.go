package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/skilluri"
	"github.com/skillport/skillport/server"
)

// withCaller puts the caller of req's bearer token in ctx, unless the
// transport put one there already.
func withCaller(ctx context.Context, req mcp.Request) context.Context {
	if server.CallerFromContext(ctx) != nil || req == nil {
		return ctx
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return server.ContextWithCaller(ctx, server.CallerFromToken(ex.TokenInfo))
	}
	return ctx
}

// entrySkill is e as the decision sees it: the skill the gateway
// re-publishes for it.
func entrySkill(e *host.Entry) *catalog.Skill {
	root := Republished(e.Origin, e.Root)
	return &catalog.Skill{URI: root + "/" + skilluri.SkillFile, Root: root, Path: e.Origin + "/" + e.Path,
		Name: e.Name, Dir: e.Origin + "/" + e.Path, Frontmatter: e.Frontmatter}
}

// sees reports whether the caller of ctx may see e.
func (g *Gateway) sees(ctx context.Context, e *host.Entry) bool {
	if g.opts.Visible == nil {
		return true
	}
	return g.opts.Visible(server.CallerFromContext(ctx), entrySkill(e))
}

// callerView is the part of v the caller of ctx sees.
func (g *Gateway) callerView(ctx context.Context, v *view) *view {
	if g.opts.Visible == nil {
		return v
	}
	out := &view{byKey: map[key]*host.Entry{}, gen: v.gen}
	for _, e := range v.entries {
		if g.sees(ctx, e) {
			out.entries = append(out.entries, e)
			out.byKey[keyOf(e)] = e
		}
	}
	return out
}

// published is the re-publication the caller of req sees.
func (g *Gateway) published(ctx context.Context, req mcp.Request) server.Snapshot {
	if g.pub == nil {
		return g.src.Snapshot()
	}
	snap, err := g.pub.SnapshotContext(withCaller(ctx, req))
	if err != nil {
		return g.pub.Snapshot()
	}
	return snap
}

// promptsMiddleware shows each caller the prompts of the skills it sees:
// prompts/list leaves the others out, and prompts/get of one answers as
// for a prompt that does not exist.
func (g *Gateway) promptsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = withCaller(ctx, req)
		switch method {
		case "prompts/get":
			if r, ok := req.(*mcp.GetPromptRequest); ok && r.Params != nil && g.hiddenPrompt(ctx, r.Params.Name) {
				// go-sdk's own words for an unknown prompt.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", r.Params.Name)}
			}
		case "prompts/list":
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListPromptsResult); ok && err == nil {
				kept := r.Prompts[:0:0]
				for _, p := range r.Prompts {
					if !g.hiddenPrompt(ctx, p.Name) {
						kept = append(kept, p)
					}
				}
				r.Prompts = kept
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// hiddenPrompt reports whether name is the prompt of a skill the caller
// of ctx may not see.
func (g *Gateway) hiddenPrompt(ctx context.Context, name string) bool {
	for _, e := range g.view.Load().entries {
		if e.Qualified == name {
			return !g.sees(ctx, e)
		}
	}
	return false
}
