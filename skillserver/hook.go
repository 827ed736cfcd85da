package skillserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/wire"
)

// compat is the one hook through which the compatibility profiles (the
// wire designs that came before the Skills Extension, profile*.go) change
// what the server answers. The core calls it at each point where a profile
// adds to an answer, and knows no profile by name; a server without it
// (srv.compat nil) answers as the Skills Extension alone.
type compat interface {
	// register adds the methods only the profiles define.
	register() error
	// list answers skills/list when the client gets a profile's entries;
	// false leaves the request to the extension.
	list(ctx context.Context, init *mcp.InitializeParams, p *wire.ListSkillsParams) (*listResponse, bool, error)
	// get answers skills/get when its parameters are not (only) the
	// extension's uri; false leaves the request to the extension.
	get(ctx context.Context, p *wire.GetParams) (*getResponse, bool, error)
	// resource reports whether a profile publishes a resource of its own
	// at uri; read answers it and the thin read path leaves it alone.
	resource(uri string) bool
	// resources are listed before the skill files, on the first page.
	resources() []*mcp.Resource
	// read answers resources/read of a URI resource reported.
	read(ctx context.Context, uri string) (*ReadResourceResult, error)
	// capabilities adds to the server's capabilities.
	capabilities(c *mcp.ServerCapabilities)
	// decorate adds to an initialize or server/discover result.
	decorate(res mcp.Result) mcp.Result
	// reading says how to read the skills, for the instructions of a
	// server that does not serve the extension.
	reading() reading
	// changed is told of every change of the served snapshot.
	changed()
	// connect is told of each connection of [Server.Transport]: see is
	// shown every request the client sends (nil: none), done is called
	// when the connection closes.
	connect(c *notifyConn) (see func(*jsonrpc.Request), done func())
	// watches reports whether a request of method, from a client that
	// did (not) declare the extension, must reach the connection's see,
	// hence may not be answered by the stdio thin read path.
	watches(method string, declared bool) bool
}

// newCompat installs the compatibility profiles of a server (profile.go);
// nil serves none. It resolves Options.Profiles, and reports whether the
// extension itself is served.
var newCompat func(srv *Server) (c compat, extension bool, err error)

// setCompat resolves the profiles the options name.
func (srv *Server) setCompat() error {
	if newCompat == nil {
		srv.ext = true
		return nil
	}
	c, ext, err := newCompat(srv)
	if err != nil {
		return err
	}
	srv.compat, srv.ext = c, ext
	return nil
}

// compatResource reports whether a profile answers reads of uri itself.
func (srv *Server) compatResource(uri string) bool {
	return srv.compat != nil && srv.compat.resource(uri)
}

// extensionReading is how the extension's skills are read.
var extensionReading = reading{"over the MCP Skills Extension (io.modelcontextprotocol/skills)",
	"List them with skills/list and read a skill's files with resources/read, starting from its SKILL.md."}

// howToRead picks the extension when it is served, else what the
// profiles say.
func (srv *Server) howToRead() reading {
	if srv.ext || srv.compat == nil {
		return extensionReading
	}
	return srv.compat.reading()
}

// declaredExtension reports whether the client declared the Skills
// Extension: in the request's own _meta (2026-07-28 requests carry their
// client capabilities), else at the session's initialize (init: the
// session's InitializeParams, which go-sdk synthesizes without
// capabilities for an older revision's request to a stateless server).
// A request with neither declared nothing. The thin read path decides
// through it too (fast.go), so both paths answer one client alike.
func declaredExtension(init *mcp.InitializeParams, meta mcp.Meta) bool {
	declared, _ := extensionKnown(init, meta)
	return declared
}

// extensionKnown reports whether the client declared the extension, and
// whether its capabilities are known at all.
func extensionKnown(init *mcp.InitializeParams, meta mcp.Meta) (declared, known bool) {
	if raw, ok := meta[mcp.MetaKeyClientCapabilities]; ok {
		b, err := json.Marshal(raw)
		var caps struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		}
		if err != nil || json.Unmarshal(b, &caps) != nil {
			return false, true
		}
		_, ok := caps.Extensions[wire.ExtensionID]
		return ok, true
	}
	if init == nil || init.Capabilities == nil {
		return false, false
	}
	_, ok := init.Capabilities.Extensions[wire.ExtensionID]
	return ok, true
}

// sessionInit returns what go-sdk knows of ss's client: its initialize
// params, nil without a session.
func sessionInit(ss *mcp.ServerSession) *mcp.InitializeParams {
	if ss == nil {
		return nil
	}
	return ss.InitializeParams()
}
