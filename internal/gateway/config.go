package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/host/approval"
	"github.com/skillport/skillport/internal/jsonc"
	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/internal/suggest"
)

// ErrConfig is wrapped by every error about a gateway.json file.
var ErrConfig = errors.New("gateway: bad configuration")

// Config is a parsed gateway.json:
//
//	{
//	  "mcpServers": {
//	    "docs": {"command": "skillport", "args": ["serve", "./skills"], "include": ["pdf-*"]},
//	    "team": {"url": "https://skills.example.com/mcp", "headers": {"Authorization": "Bearer ${TEAM_TOKEN}"},
//	             "exclude": ["experimental-*"]}
//	  },
//	  "skillDirs": [{"label": "local", "path": "~/.claude/skills", "exclude": ["scratch"]}],
//	  "approvals": {"allow": [{"origin": "docs", "skill": "*"}], "deny": [], "elicit": true},
//	  "tokenBudget": 2000,
//	  "indexBodies": false
//	}
//
// The origins are read by [host.ParseConfig]: mcpServers (Claude Desktop,
// Cursor) or servers (VS Code), each key giving the origin label the model
// sees (derived to lowercase letters, digits and hyphens, or set with
// "label"), and skillDirs, local skill folders. "${VAR}" is replaced from
// the environment, so secrets need not live in the file.
//
// include and exclude filter an origin's skills by name, skill path or
// qualified name, with shell patterns, case-insensitively. An absent
// include list means every skill; an empty one means none. exclude wins.
type Config struct {
	// Path is the file the configuration was read from.
	Path string
	// Notes are remarks for the user: derived labels, skipped servers.
	Notes []string
	// Origins are the upstream servers and skill folders, in label order
	// (servers first).
	Origins []host.Origin
	// Filters hold each origin's include/exclude lists, by label.
	Filters map[string]*Filter
	// Auth holds how the host identifies itself to the authorization
	// server of an upstream that requires OAuth, by label (an upstream's
	// "auth" object). Upstreams without one use the tokens of
	// "skillport auth login".
	Auth map[string]*UpstreamAuth
	// Approvals are the approval settings.
	Approvals ApprovalConfig
	// TokenBudget bounds the catalog in the instructions and in the
	// read_skill description, in tokens (4 bytes each). 0 means the default.
	TokenBudget int
	// IndexBodies adds SKILL.md bodies to the search index: those of local
	// folders when the index is built, those of MCP skills once they were
	// loaded. MCP bodies are never fetched for the index (lazy retrieval).
	IndexBodies bool
	// CallTimeout bounds each call to an upstream; 0 means host's default.
	CallTimeout time.Duration
	// StartupWait bounds how long the first requests wait for upstreams
	// to be listed (initialize waits at most HandshakeWait); 0 means the
	// default.
	StartupWait time.Duration
	// AllowDynamic lets skills with "dynamic" resources be loaded (after
	// approval on every load).
	AllowDynamic bool
	// Cache keeps verified files in the user cache directory (default true).
	Cache bool
}

// ApprovalConfig is the "approvals" object.
type ApprovalConfig struct {
	// Allow and Deny are policy rules ({"origin", "skill"}, "*" for any);
	// deny wins. They decide before anyone is asked.
	Allow []approval.Rule `json:"allow"`
	Deny  []approval.Rule `json:"deny"`
	// Elicit asks the user through the connected client (MCP elicitation)
	// when no rule decides and the client supports it. Default true.
	Elicit *bool `json:"elicit"`
	// Store is the approvals file; default approval.DefaultPath(). "" keeps
	// approvals in memory only.
	Store *string `json:"store"`
}

// ElicitEnabled reports whether unmatched requests are asked through elicitation.
func (a *ApprovalConfig) ElicitEnabled() bool { return a.Elicit == nil || *a.Elicit }

// Filter is an origin's include/exclude lists.
type Filter struct {
	// Include, when non-nil, admits only skills matching one of its
	// patterns; an empty, non-nil Include admits none.
	Include []string
	// Exclude removes skills matching one of its patterns.
	Exclude []string
}

// Admits reports whether the skill with this name and path passes the
// filter. Patterns are path.Match patterns compared case-insensitively
// with the name, the skill path and the qualified name.
func (f *Filter) Admits(name, skillPath, qualified string) bool {
	if f == nil {
		return true
	}
	cands := []string{strings.ToLower(name), strings.ToLower(skillPath), strings.ToLower(qualified)}
	match := func(pats []string) bool {
		for _, p := range pats {
			for _, c := range cands {
				if ok, _ := path.Match(strings.ToLower(p), c); ok {
					return true
				}
			}
		}
		return false
	}
	if match(f.Exclude) {
		return false
	}
	return f.Include == nil || match(f.Include)
}

// Default configuration values.
const (
	DefaultTokenBudget = 2000
	DefaultStartupWait = 5 * time.Second
)

// LoadConfig reads and parses a gateway.json file.
func LoadConfig(file string) (*Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return ParseConfig(file, data)
}

var topKeys = []string{"mcpServers", "servers", "skillDirs", "approvals", "tokenBudget", "indexBodies", "callTimeoutMs", "startupWaitMs", "allowDynamic", "cache"}

// ParseConfig parses gateway.json content; file names it in errors and
// anchors relative paths.
func ParseConfig(file string, data []byte) (*Config, error) {
	bad := func(field, format string, args ...any) error {
		where := file
		if field != "" {
			where += ": " + field
		}
		return fmt.Errorf("%w: %s: %s", ErrConfig, where, fmt.Sprintf(format, args...))
	}
	// Comments and trailing commas (JSONC) are blanked out; offsets, and so
	// the line:column of every later error, stay those of the file.
	data, err := jsonc.Standardize(file, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	top, err := objectOf(data)
	if err != nil {
		return nil, bad("", "not a JSON object: %v", err)
	}
	// A host's own configuration file (claude_desktop_config.json has
	// globalShortcut, preferences…) is taken as it is: its other keys are
	// not ours to judge. A file that sets a gateway field is a
	// gateway.json, where an unknown key is an error; a key close to a
	// gateway field is taken for a typo of it in any file.
	gatewayFile := false
	for k := range top {
		if slices.Contains(topKeys, k) && k != "mcpServers" && k != "servers" {
			gatewayFile = true
		}
	}
	var ignored []string
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if slices.Contains(topKeys, k) {
			continue
		}
		if c := suggest.Closest(k, topKeys); c != "" {
			return nil, bad(k, "unknown field; did you mean %s? (the fields are in docs/gateway.md)", c)
		}
		if !gatewayFile {
			ignored = append(ignored, k)
			continue
		}
		return nil, bad(k, "unknown field; a gateway.json has mcpServers (or servers) and the gateway's own fields, listed in docs/gateway.md")
	}
	base := "."
	if file != "" {
		base = filepath.Dir(file)
	}
	cfg := &Config{Path: file, Filters: map[string]*Filter{}, Cache: true}
	origins, notes, err := host.ParseConfigFile(file, data, base)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cfg.Origins, cfg.Notes = origins, notes
	if len(ignored) > 0 {
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("ignoring %s: not a gateway setting", strings.Join(ignored, ", ")))
	}
	labels := map[string]string{}
	for _, o := range origins {
		labels[o.Label] = o.Label
	}
	// host.ParseConfig returns the enabled servers of mcpServers, then of
	// servers, each in key order, then skillDirs in order: walk the same
	// entries to find each origin's include/exclude lists.
	var raws []json.RawMessage
	var fields []string
	for _, group := range []string{"mcpServers", "servers"} {
		raw, ok := top[group]
		if !ok {
			continue
		}
		servers, err := objectOf(raw)
		if err != nil {
			return nil, bad(group, "must be an object mapping names to servers: %v", err)
		}
		for _, k := range sortedKeys(servers) {
			var d struct {
				Disabled bool `json:"disabled"`
			}
			if err := decodeObject(servers[k], &d); err != nil {
				return nil, bad(fmt.Sprintf("%s[%q]", group, k), "%v", err)
			}
			if !d.Disabled {
				raws = append(raws, servers[k])
				fields = append(fields, fmt.Sprintf("%s[%q]", group, k))
			}
		}
	}
	if raw, ok := top["skillDirs"]; ok {
		var dirs []json.RawMessage
		if err := json.Unmarshal(raw, &dirs); err != nil {
			return nil, bad("skillDirs", "must be an array of {\"label\": ..., \"path\": ...}: %v", err)
		}
		for i, d := range dirs {
			raws = append(raws, d)
			fields = append(fields, fmt.Sprintf("skillDirs[%d]", i))
		}
	}
	if len(raws) != len(origins) {
		return nil, bad("", "cannot match the %d configured origins with their entries (%d)", len(origins), len(raws))
	}
	for i, raw := range raws {
		var f struct {
			Include *[]string       `json:"include"`
			Exclude []string        `json:"exclude"`
			Auth    json.RawMessage `json:"auth"`
		}
		if err := decodeObject(raw, &f); err != nil {
			return nil, bad(fields[i], "%v", err)
		}
		if f.Auth != nil {
			a, err := parseUpstreamAuth(f.Auth, origins[i].URL != "")
			if err != nil {
				return nil, bad(fields[i]+".auth", "%v", err)
			}
			if a.ClientSecretFile != "" {
				if a.ClientSecretFile, err = resolvePath(base, a.ClientSecretFile); err != nil {
					return nil, bad(fields[i]+".auth.clientSecretFile", "%v", err)
				}
			}
			if cfg.Auth == nil {
				cfg.Auth = map[string]*UpstreamAuth{}
			}
			cfg.Auth[origins[i].Label] = a
		}
		filter, err := newFilter(f.Include, f.Exclude)
		if err != nil {
			return nil, bad(fields[i], "%v", err)
		}
		if filter != nil {
			cfg.Filters[origins[i].Label] = filter
		}
	}

	if raw, ok := top["approvals"]; ok {
		if err := decodeObject(raw, &cfg.Approvals); err != nil {
			return nil, bad("approvals", "%v", err)
		}
		for kind, rules := range map[string][]approval.Rule{"allow": cfg.Approvals.Allow, "deny": cfg.Approvals.Deny} {
			for i, r := range rules {
				if r.Origin == "" || r.Skill == "" {
					return nil, bad(fmt.Sprintf("approvals.%s[%d]", kind, i), "a rule needs both origin and skill (use \"*\" for any)")
				}
				if r.Origin != "*" && labels[r.Origin] == "" {
					return nil, bad(fmt.Sprintf("approvals.%s[%d].origin", kind, i), "%q is not a configured origin (labels: %s)", r.Origin, strings.Join(sortedKeys(labels), ", "))
				}
			}
		}
		if s := cfg.Approvals.Store; s != nil && *s != "" {
			p, err := resolvePath(base, *s)
			if err != nil {
				return nil, bad("approvals.store", "%v", err)
			}
			cfg.Approvals.Store = &p
		}
	}

	num := func(key string, min int64) (int64, bool, error) {
		raw, ok := top[key]
		if !ok {
			return 0, false, nil
		}
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < min {
			return 0, false, bad(key, "must be an integer >= %d", min)
		}
		return n, true, nil
	}
	flag := func(key string, dst *bool) error {
		if raw, ok := top[key]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return bad(key, "must be true or false")
			}
		}
		return nil
	}
	cfg.TokenBudget = DefaultTokenBudget
	if n, ok, err := num("tokenBudget", 100); err != nil {
		return nil, err
	} else if ok {
		cfg.TokenBudget = int(n)
	}
	if n, ok, err := num("callTimeoutMs", 1); err != nil {
		return nil, err
	} else if ok {
		cfg.CallTimeout = time.Duration(n) * time.Millisecond
	}
	cfg.StartupWait = DefaultStartupWait
	if n, ok, err := num("startupWaitMs", 0); err != nil {
		return nil, err
	} else if ok {
		cfg.StartupWait = time.Duration(n) * time.Millisecond
	}
	for key, dst := range map[string]*bool{"indexBodies": &cfg.IndexBodies, "allowDynamic": &cfg.AllowDynamic, "cache": &cfg.Cache} {
		if err := flag(key, dst); err != nil {
			return nil, err
		}
	}
	if len(cfg.Origins) == 0 {
		return nil, bad("", "no origins: add upstream servers under \"mcpServers\" or local folders under \"skillDirs\"")
	}
	return cfg, nil
}

func newFilter(include *[]string, exclude []string) (*Filter, error) {
	f := &Filter{Exclude: exclude}
	if include != nil {
		f.Include = *include
		if f.Include == nil {
			f.Include = []string{}
		}
	}
	for _, list := range []struct {
		name string
		pats []string
	}{{"include", f.Include}, {"exclude", f.Exclude}} {
		for i, p := range list.pats {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return nil, fmt.Errorf("%s[%d]: %q is not a valid pattern (use a name, a skill path, or a shell pattern such as \"pdf-*\")", list.name, i, p)
			}
		}
	}
	if include == nil && len(exclude) == 0 {
		return nil, nil
	}
	return f, nil
}

// objectOf splits a JSON object into its fields, refusing duplicate keys
// (a second "include" must not silently replace the first).
func objectOf(raw []byte) (map[string]json.RawMessage, error) {
	m, err := jsonobj.Map(raw)
	var dup *jsonobj.DuplicateKeyError
	if errors.As(err, &dup) {
		return nil, fmt.Errorf("%q appears twice", dup.Key)
	}
	return m, err
}

// decodeObject decodes raw, which must be a JSON object without duplicate
// keys, into v. Unknown fields are ignored: server entries carry fields of
// other clients ("autoApprove", "timeout").
func decodeObject(raw []byte, v any) error {
	if _, err := objectOf(raw); err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func resolvePath(base, p string) (string, error) {
	var missing string
	p = os.Expand(p, func(name string) string {
		v, ok := os.LookupEnv(strings.TrimPrefix(name, "env:"))
		if !ok && missing == "" {
			missing = name
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("${%s} is not set in the environment; set it or remove the reference", missing)
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return p, nil
}

// UpstreamAuth is an upstream's "auth" object: the OAuth client the host
// is for that server's authorization server.
//
//	"auth": {"clientId": "gateway", "clientSecretEnv": "TEAM_SECRET", "scopes": ["skills:read"]}
//
// With a secret the gateway is a machine and obtains tokens with the
// client credentials grant; without one it uses the tokens of
// "skillport auth login URL" (clientId then names a pre-registered public
// client). The secret comes from an environment variable or a file, never
// from the configuration itself.
type UpstreamAuth struct {
	ClientID          string   `json:"clientId"`
	ClientSecretEnv   string   `json:"clientSecretEnv"`
	ClientSecretFile  string   `json:"clientSecretFile"`
	ClientMetadataURL string   `json:"clientMetadataUrl"`
	Scopes            []string `json:"scopes"`
}

var authKeys = []string{"clientId", "clientSecretEnv", "clientSecretFile", "clientMetadataUrl", "scopes"}

func parseUpstreamAuth(raw json.RawMessage, isURL bool) (*UpstreamAuth, error) {
	if !isURL {
		return nil, errors.New("applies to servers reached by URL only")
	}
	obj, err := objectOf(raw)
	if err != nil {
		return nil, fmt.Errorf("must be an object: %v", err)
	}
	for k := range obj {
		if !slices.Contains(authKeys, k) {
			if k == "clientSecret" {
				return nil, errors.New("clientSecret: a secret does not belong in the file; name its environment variable (clientSecretEnv) or file (clientSecretFile)")
			}
			return nil, fmt.Errorf("%s: unknown field; the fields are %s", k, strings.Join(authKeys, ", "))
		}
	}
	var a UpstreamAuth
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	if (a.ClientSecretEnv != "" || a.ClientSecretFile != "") && a.ClientID == "" {
		return nil, errors.New("a client secret needs clientId")
	}
	if a.ClientSecretEnv != "" && a.ClientSecretFile != "" {
		return nil, errors.New("give clientSecretEnv or clientSecretFile, not both")
	}
	return &a, nil
}
