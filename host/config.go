package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/skillport/skillport/internal/suggest"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/skillport/skillport/internal/gitspec"
	"github.com/skillport/skillport/internal/jsonc"
	"github.com/skillport/skillport/internal/ociref"
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
// The file may hold comments and trailing commas (JSONC, as VS Code's
// mcp.json does); errors name the file and, where there is one, the
// line and column. ${VAR} and ${env:VAR} in commands, arguments,
// environment values, URLs, headers and skill folder paths are replaced
// from the environment; a variable that is not set is an error naming it.
func LoadConfig(path string) ([]Origin, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	origins, notes, err := parseConfig(path, data, filepath.Dir(path))
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	return origins, notes, nil
}

var inputRef = regexp.MustCompile(`\$\{input:[^}]{0,64}\}?`)

var envRef = regexp.MustCompile(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand replaces ${VAR} references from the environment. An unset
// variable is an error: a server started with an empty token fails later
// with a message that no longer says why.
func expand(s string) (string, error) {
	// VS Code prompts for ${input:ID} (its "inputs"); sent as written, the
	// server would get the literal text as a token.
	if m := inputRef.FindString(s); m != "" {
		return "", fmt.Errorf("%s is a value VS Code prompts for, and skillport cannot: write the value here, or ${env:VAR} and set VAR", m)
	}
	var missing string
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		name := envRef.FindStringSubmatch(m)[1]
		v, ok := os.LookupEnv(name)
		if !ok && missing == "" {
			missing = name
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("${%s} is not set in the environment; set it (an empty value is allowed) or remove the reference", missing)
	}
	return out, nil
}

// ParseConfig parses configuration bytes; relative skill folders resolve
// against base.
func ParseConfig(data []byte, base string) ([]Origin, []string, error) {
	return parseConfig("", data, base)
}

// ParseConfigFile is ParseConfig for the content of file, which errors
// name with the line and column.
func ParseConfigFile(file string, data []byte, base string) ([]Origin, []string, error) {
	return parseConfig(file, data, base)
}

// Known keys. Other clients write more keys into the same files (Claude
// Desktop's "preferences", Cline's "autoApprove"): those are ignored, but a
// key one or two letters from one of ours ("mcpServer", "comand") is a typo
// that would silently drop a server, and is an error.
var (
	configKeys      = []string{"mcpServers", "servers", "skillDirs"}
	serverKeys      = []string{"label", "type", "command", "args", "env", "cwd", "url", "headers", "disabled", "include", "exclude"}
	otherServerKeys = []string{"name", "description", "timeout", "autoApprove", "alwaysAllow", "transportType", "envFile", "gallery",
		"version", "disabledTools", "trust", "oauth", "httpUrl", "serverUrl", "includeTools", "excludeTools", "auth", "dev", "enabled", "id"}
	skillDirKeys = []string{"label", "path", "include", "exclude"}
)

// typo returns the known key that k looks like a misspelling of, or "".
func typo(k string, known, others []string) string {
	if slices.Contains(known, k) || slices.Contains(others, k) {
		return ""
	}
	for _, w := range known {
		limit := 1
		if len(w) > 5 {
			limit = 2
		}
		if strings.EqualFold(k, w) || suggest.Distance(strings.ToLower(k), strings.ToLower(w)) <= limit {
			return w
		}
	}
	return ""
}

func parseConfig(file string, data []byte, base string) ([]Origin, []string, error) {
	std, err := jsonc.Standardize(file, data)
	if err != nil {
		return nil, nil, err
	}
	named := func(err error) error {
		if file == "" {
			return err
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	at := func(key, format string, args ...any) error {
		if off := jsonc.KeyOffset(data, key); off >= 0 {
			return jsonc.At(file, data, off, format, args...)
		}
		return named(fmt.Errorf(format, args...))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(std, &top); err != nil || top == nil {
		return nil, nil, named(errors.New("not a JSON configuration: the file must hold one object with \"mcpServers\", \"servers\" or \"skillDirs\""))
	}
	for k := range top {
		if w := typo(k, configKeys, nil); w != "" {
			return nil, nil, at(k, "unknown key %q; did you mean %q?", k, w)
		}
	}
	var c Config
	if err := jsonc.Unmarshal(file, data, &c, false); err != nil {
		return nil, nil, err
	}
	if len(top) > 0 && c.MCPServers == nil && c.Servers == nil && c.SkillDirs == nil {
		keys := make([]string, 0, len(top))
		for k := range top {
			keys = append(keys, fmt.Sprintf("%q", k))
		}
		sort.Strings(keys)
		return nil, nil, named(fmt.Errorf("no \"mcpServers\", \"servers\" or \"skillDirs\" (the keys are %s)", strings.Join(keys, ", ")))
	}
	for _, group := range []string{"mcpServers", "servers"} {
		var entries map[string]map[string]json.RawMessage
		if json.Unmarshal(top[group], &entries) != nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(entries)) {
			for k := range entries[name] {
				if w := typo(k, serverKeys, otherServerKeys); w != "" {
					return nil, nil, at(k, "%s[%q]: unknown key %q; did you mean %q?", group, name, k, w)
				}
			}
		}
	}
	if raw, ok := top["skillDirs"]; ok {
		var dirs []map[string]json.RawMessage
		if json.Unmarshal(raw, &dirs) == nil {
			for i, d := range dirs {
				for k := range d {
					if !slices.Contains(skillDirKeys, k) {
						return nil, nil, at(k, "skillDirs[%d]: unknown key %q; the keys are %s", i, k, strings.Join(skillDirKeys, ", "))
					}
				}
			}
		}
	}
	origins, notes, err := c.origins(base)
	if err != nil {
		return nil, nil, named(err)
	}
	return origins, notes, nil
}

// origins turns a decoded configuration into origins.
func (c *Config) origins(base string) ([]Origin, []string, error) {
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
		for _, k := range slices.Sorted(maps.Keys(group)) {
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
			var err error
			x := func(field, v string) string {
				out, e := expand(v)
				if e != nil && err == nil {
					err = fmt.Errorf("server %q: %s: %w", k, field, e)
				}
				return out
			}
			switch {
			case s.Command != "" && s.URL != "":
				return nil, nil, fmt.Errorf("server %q has both command and url; keep one", k)
			case s.Command != "":
				o.Command = x("command", s.Command)
				for i, a := range s.Args {
					o.Args = append(o.Args, x(fmt.Sprintf("args[%d]", i), a))
				}
				if len(s.Env) > 0 {
					o.Env = map[string]string{}
					for _, ek := range slices.Sorted(maps.Keys(s.Env)) {
						o.Env[ek] = x("env."+ek, s.Env[ek])
					}
				}
				o.WorkDir = s.Cwd
			case s.URL != "":
				if s.Type == "sse" {
					notes = append(notes, fmt.Sprintf("server %q: the legacy SSE transport is not supported; trying Streamable HTTP", k))
				}
				o.URL = x("url", s.URL)
				if len(s.Headers) > 0 {
					o.Headers = map[string]string{}
					for _, hk := range slices.Sorted(maps.Keys(s.Headers)) {
						o.Headers[hk] = x("headers."+hk, s.Headers[hk])
					}
				}
			default:
				return nil, nil, fmt.Errorf("server %q has neither command nor url", k)
			}
			if err != nil {
				return nil, nil, err
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
		p, err := expand(d.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("skillDirs[%d].path: %w", i, err)
		}
		if gitspec.IsSpec(p) {
			if _, err := gitspec.ParseSpec(p); err != nil {
				return nil, nil, fmt.Errorf("skillDirs[%d]: %w", i, err)
			}
			origins = append(origins, Origin{Label: d.Label, Git: p})
			continue
		}
		if ociref.IsSpec(p) {
			if _, err := ociref.Parse(p); err != nil {
				return nil, nil, fmt.Errorf("skillDirs[%d]: %w", i, err)
			}
			origins = append(origins, Origin{Label: d.Label, OCI: p})
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
