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

// snippets are the copy-paste configurations that use this server's MCP
// endpoint from common clients, and the commands that fetch this skill.
func (h *Handler) snippets(r *http.Request, sk *catalog.Skill) []snippet {
	mcpURL := baseURL(r) + h.opts.MCPPath
	name := "skillport"
	return []snippet{
		{"Claude Desktop", "claude_desktop_config.json (through the mcp-remote bridge)",
			indentJSON(object{"mcpServers": object{name: object{"command": "npx", "args": []string{"-y", "mcp-remote", mcpURL}}}})},
		{"Cursor", "~/.cursor/mcp.json",
			indentJSON(object{"mcpServers": object{name: object{"url": mcpURL}}})},
		{"VS Code", ".vscode/mcp.json",
			indentJSON(object{"servers": object{name: object{"type": "http", "url": mcpURL}}})},
		{"Codex", "~/.codex/config.toml",
			"[mcp_servers." + name + "]\nurl = " + tomlString(mcpURL)},
		{"skillport gateway", "gateway.json, then: skillport gateway --config gateway.json",
			indentJSON(object{"mcpServers": object{name: object{"url": mcpURL, "include": []string{sk.Path}}}})},
		{"skillport pull", "shell: writes this skill, verified, to .claude/skills/" + sk.Name,
			"skillport pull " + shellQuote(mcpURL) + " --skill " + shellQuote(sk.Path) + " --to .claude/skills"},
	}
}

func tomlString(s string) string {
	b, _ := json.Marshal(s) // a JSON string of printable text is a TOML basic string
	return string(b)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
