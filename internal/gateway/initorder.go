package gateway

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// holdUntilInitialized is a sending middleware that drops list_changed
// notifications to a session that has not initialized: the gateway adds
// its tools and prompts when the upstreams answer, which may be before a
// client's initialize arrives, and MCP forbids notifications before the
// handshake. Nothing is lost: a client that initializes later lists the
// current tools, prompts and resources.
func holdUntilInitialized(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") && strings.HasSuffix(method, "/list_changed") {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.InitializeParams() == nil {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}
