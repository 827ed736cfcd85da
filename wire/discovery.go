package wire

// WellKnownPath is where a web server publishes its Agent Skills discovery
// document (the well-known URI discovery index).
const WellKnownPath = "/.well-known/agent-skills/index.json"

// Discovery is the Agent Skills discovery document (schema 0.2.0, $schema
// [IndexSchema]) served over HTTP: every entry carries the digest of the
// bytes its url serves. MCP, when set, is the URL of an MCP endpoint that
// serves the same skills, so that a host given only a web address can go
// on over MCP; clients that do not know the member ignore it.
type Discovery struct {
	Schema string       `json:"$schema"`
	Skills []IndexEntry `json:"skills"`
	MCP    string       `json:"mcp,omitempty"`
}
