package install

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Agent is an agent that reads skills from a folder.
type Agent struct {
	// Name is what --agent takes.
	Name string
	// Aliases are other names --agent takes.
	Aliases []string
	// User and Project are the skills folder relative to the home
	// directory and to the project root.
	User, Project string
	// DetectUser and DetectProject are the folders whose presence says
	// the agent is in use (relative as above).
	DetectUser, DetectProject string
}

// Agents are the agents install knows, with the folders their own
// documentation names (docs/install.md cites each).
var Agents = []Agent{
	{Name: "claude-code", Aliases: []string{"claude"}, User: ".claude/skills", Project: ".claude/skills", DetectUser: ".claude", DetectProject: ".claude"},
	{Name: "cursor", User: ".cursor/skills", Project: ".cursor/skills", DetectUser: ".cursor", DetectProject: ".cursor"},
	{Name: "codex", User: ".agents/skills", Project: ".agents/skills", DetectUser: ".codex", DetectProject: ".codex"},
	{Name: "gemini-cli", Aliases: []string{"gemini"}, User: ".gemini/skills", Project: ".gemini/skills", DetectUser: ".gemini", DetectProject: ".gemini"},
	{Name: "goose", User: ".config/goose/skills", Project: ".agents/skills", DetectUser: ".config/goose", DetectProject: ".goose"},
	{Name: "vscode", Aliases: []string{"copilot", "github-copilot"}, User: ".copilot/skills", Project: ".github/skills", DetectUser: ".copilot", DetectProject: ".github/skills"},
	{Name: "opencode", User: ".config/opencode/skills", Project: ".opencode/skills", DetectUser: ".config/opencode", DetectProject: ".opencode"},
	{Name: "agents", Aliases: []string{"generic"}, User: ".agents/skills", Project: ".agents/skills", DetectUser: ".agents", DetectProject: ".agents"},
}

// AgentNames lists the names --agent takes.
func AgentNames() []string {
	var out []string
	for _, a := range Agents {
		out = append(out, a.Name)
	}
	return out
}

// FindAgent returns the agent called name (or one of its aliases).
func FindAgent(name string) (Agent, error) {
	for _, a := range Agents {
		if a.Name == name || slices.Contains(a.Aliases, name) {
			return a, nil
		}
	}
	return Agent{}, fmt.Errorf("--agent %s: unknown agent; give one of %s", name, strings.Join(AgentNames(), ", "))
}

// Folder is the agent's skills folder under base (the home directory for
// user scope, the project root for project scope).
func (a Agent) Folder(base string, project bool) string {
	if project {
		return filepath.Join(base, filepath.FromSlash(a.Project))
	}
	return filepath.Join(base, filepath.FromSlash(a.User))
}

// Detect returns the agents whose folder exists under base.
func Detect(base string, project bool) []Agent {
	var out []Agent
	for _, a := range Agents {
		d := a.DetectUser
		if project {
			d = a.DetectProject
		}
		if fi, err := os.Stat(filepath.Join(base, filepath.FromSlash(d))); err == nil && fi.IsDir() {
			out = append(out, a)
		}
	}
	return out
}
