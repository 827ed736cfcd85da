package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/skillport/skillport/gitsource"
	"github.com/skillport/skillport/skill"
)

// ServerConfig is one server in an mcpServers-style configuration file, as
// Claude Desktop, Cursor and VS Code write them.
type ServerConfig struct {
	// Label overrides the label derived from the server's key (skillport extension).
	Label   string            `json:"label,omitempty"`
	Type    string            `json:"type,omitempty"` // VS Code: "stdio", "http", "sse"
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Disabled servers are skipped (Cline, Claude Code).
	Disabled bool `json:"disabled,omitempty"`
}

// SkillDirConfig is a local skill folder in the configuration file.
type SkillDirConfig struct {
	Label string `json:"label"`
	Path  string `json:"path"`
}

// Config is a host configuration file: "mcpServers" (Claude Desktop,
// Cursor), "servers" (VS Code) and skillport's own "skillDirs".
type Config struct {
	MCPServers map[string]ServerConfig `json:"mcpServers,omitempty"`
	Servers    map[string]ServerConfig `json:"servers,omitempty"`
	SkillDirs  []SkillDirConfig        `json:"skillDirs,omitempty"`
}

// LoadConfig reads a configuration file and returns its origins, in key
// order, and notes for the user (derived labels, skipped servers).
// ${VAR} and ${env:VAR} in commands, arguments, environment values, URLs
// and headers are replaced from the environment.
func LoadConfig(path string) ([]Origin, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	origins, notes, err := ParseConfig(data, filepath.Dir(path))
	if err != nil {
		return nil, nil, fmt.Errorf("config: %s: %w", path, err)
	}
	return origins, notes, nil
}

var envRef = regexp.MustCompile(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}`)

func expand(s string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		return os.Getenv(envRef.FindStringSubmatch(m)[1])
	})
}

// ParseConfig parses configuration bytes; relative skill folders resolve
// against base.
func ParseConfig(data []byte, base string) ([]Origin, []string, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return nil, nil, fmt.Errorf("not a JSON configuration: %w", err)
	}
	var origins []Origin
	var notes []string
	used := map[string]bool{}
	label := func(want, key string) string {
		l := want
		if l == "" {
			l = DeriveLabel(key)
		}
		if want == "" && l != key {
			notes = append(notes, fmt.Sprintf("server %q is labelled %q", key, l))
		}
		base, n := l, 2
		for used[l] {
			suffix := fmt.Sprintf("-%d", n)
			l = strings.TrimRight(base[:min(len(base), 32-len(suffix))], "-") + suffix
			n++
		}
		used[l] = true
		return l
	}
	for _, group := range []map[string]ServerConfig{c.MCPServers, c.Servers} {
		keys := make([]string, 0, len(group))
		for k := range group {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s := group[k]
			if s.Disabled {
				notes = append(notes, fmt.Sprintf("server %q is disabled; skipped", k))
				continue
			}
			if s.Label != "" {
				if err := ValidLabel(s.Label); err != nil {
					return nil, nil, fmt.Errorf("server %q: %w", k, err)
				}
				if used[s.Label] {
					return nil, nil, fmt.Errorf("server %q: label %q is used twice", k, s.Label)
				}
			}
			o := Origin{Label: label(s.Label, k)}
			switch {
			case s.Command != "" && s.URL != "":
				return nil, nil, fmt.Errorf("server %q has both command and url; keep one", k)
			case s.Command != "":
				o.Command = expand(s.Command)
				for _, a := range s.Args {
					o.Args = append(o.Args, expand(a))
				}
				if len(s.Env) > 0 {
					o.Env = map[string]string{}
					for ek, ev := range s.Env {
						o.Env[ek] = expand(ev)
					}
				}
				o.WorkDir = s.Cwd
			case s.URL != "":
				if s.Type == "sse" {
					notes = append(notes, fmt.Sprintf("server %q: the legacy SSE transport is not supported; trying Streamable HTTP", k))
				}
				o.URL = expand(s.URL)
				if len(s.Headers) > 0 {
					o.Headers = map[string]string{}
					for hk, hv := range s.Headers {
						o.Headers[hk] = expand(hv)
					}
				}
			default:
				return nil, nil, fmt.Errorf("server %q has neither command nor url", k)
			}
			origins = append(origins, o)
		}
	}
	for i, d := range c.SkillDirs {
		if d.Path == "" {
			return nil, nil, fmt.Errorf("skillDirs[%d] has no path", i)
		}
		if err := ValidLabel(d.Label); err != nil {
			return nil, nil, fmt.Errorf("skillDirs[%d]: %w", i, err)
		}
		if used[d.Label] {
			return nil, nil, fmt.Errorf("skillDirs[%d]: label %q is used twice", i, d.Label)
		}
		used[d.Label] = true
		p := expand(d.Path)
		if gitsource.IsSpec(p) {
			if _, err := gitsource.ParseSpec(p); err != nil {
				return nil, nil, fmt.Errorf("skillDirs[%d]: %w", i, err)
			}
			origins = append(origins, Origin{Label: d.Label, Git: p})
			continue
		}
		if strings.HasPrefix(p, "~/") {
			if home, err := os.UserHomeDir(); err == nil {
				p = filepath.Join(home, p[2:])
			}
		} else if !filepath.IsAbs(p) && base != "" {
			p = filepath.Join(base, p)
		}
		origins = append(origins, Origin{Label: d.Label, Dir: p, Display: d.Path})
	}
	return origins, notes, nil
}

// DeriveLabel turns a configuration key ("My Docs Server") into a valid
// origin label ("my-docs-server").
func DeriveLabel(key string) string {
	if l := skill.Slug(key, 32); l != "" {
		return l
	}
	return "server"
}
