package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/skillport/skillport/catalog"
)

// baseURL is the address the caller reached this server at, for snippets
// and the discovery document. The Host header is the caller's own: it is
// only ever shown back to that caller, escaped.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// jsonValue shows a frontmatter value as JSON text. The page escapes it;
// escaping HTML here too would show \u003c where the skill has "<".
func jsonValue(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "?"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func indentJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

type object = map[string]any

// gatewayConfigPath stands in the host snippets for where the user saves
// the gateway.json snippet; hosts do not expand "~", so it is absolute.
const gatewayConfigPath = "/path/to/gateway.json"

// snippets are the copy-paste configurations that use this server's MCP
// endpoint from common clients, and the commands that fetch this skill.
//
// Claude Desktop, Cursor, VS Code and Codex get the skillport gateway:
// they use tools and prompts, and a skills server has neither (it serves
// the Skills Extension), so a direct connection would give them nothing.
// The direct configuration is offered to hosts that speak the extension.
func (h *Handler) snippets(r *http.Request, sk *catalog.Skill) []snippet {
	mcpURL := baseURL(r) + h.opts.MCPPath
	name := "skillport"
	gatewayArgs := []string{"gateway", "--config", gatewayConfigPath}
	stdioServer := object{"command": "skillport", "args": gatewayArgs}
	return []snippet{
		{"skillport gateway", "gateway.json: the gateway turns this server's skills into tools for Claude Desktop, Cursor, VS Code and Codex; save it, then add the gateway to your host below",
			indentJSON(object{"mcpServers": object{name: object{"url": mcpURL, "include": []string{sk.Path}}}})},
		{"Claude Desktop", "claude_desktop_config.json: runs the gateway (replace " + gatewayConfigPath + " with where you saved gateway.json)",
			indentJSON(object{"mcpServers": object{name: stdioServer}})},
		{"Cursor", "~/.cursor/mcp.json: runs the gateway",
			indentJSON(object{"mcpServers": object{name: stdioServer}})},
		{"VS Code", ".vscode/mcp.json: runs the gateway",
			indentJSON(object{"servers": object{name: object{"type": "stdio", "command": "skillport", "args": gatewayArgs}}})},
		{"Codex", "~/.codex/config.toml: runs the gateway",
			"[mcp_servers." + name + "]\ncommand = \"skillport\"\nargs = " + tomlStrings(gatewayArgs)},
		{"Hosts with the Skills Extension", "a host that lists skills with skills/list connects to this server directly",
			indentJSON(object{"mcpServers": object{name: object{"url": mcpURL}}})},
		{"skillport pull", "shell: writes this skill, verified, to .claude/skills/" + sk.Name,
			"skillport pull " + shellQuote(mcpURL) + " --skill " + shellQuote(sk.Path) + " --to .claude/skills"},
	}
}

// tomlStrings is a TOML array of basic strings.
func tomlStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func tomlString(s string) string {
	b, _ := json.Marshal(s) // a JSON string of printable text is a TOML basic string
	return string(b)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
