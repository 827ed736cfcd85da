package skillserver

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/wire"
)

// legacyFields are the SEP-2076 fields a SKILL.md frontmatter supplies.
//
// Mapping (each field is optional; a value of the wrong type is ignored):
//
//	title        <- title, else metadata.title            (string)
//	version      <- version, else metadata.version        (string or number)
//	tags         <- tags, else metadata.tags              (list of strings, or one comma-separated string)
//	arguments    <- arguments                             (list of {name, description, required}, or of names)
//	dependencies <- dependencies                          ({tools: [name], prompts: [name | {name}], resources: [uri | {uri}]})
type legacyFields struct {
	title, version string
	tags           []string
	arguments      []wire.SkillArgument
	deps           *wire.SkillDependencies
}

func mapFrontmatter(fm skill.Frontmatter) legacyFields {
	var out legacyFields
	meta, _ := get(fm, "metadata").(map[string]any)
	pick := func(key string) any {
		if v := get(fm, key); v != nil {
			return v
		}
		if meta != nil {
			return meta[key]
		}
		return nil
	}
	out.title, _ = pick("title").(string)
	switch v := pick("version").(type) {
	case string:
		out.version = v
	case json.Number:
		out.version = v.String()
	}
	switch v := pick("tags").(type) {
	case string:
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out.tags = append(out.tags, t)
			}
		}
	case []any:
		for _, t := range v {
			if s, ok := t.(string); ok && s != "" {
				out.tags = append(out.tags, s)
			}
		}
	}
	if args, ok := get(fm, "arguments").([]any); ok {
		for _, a := range args {
			switch a := a.(type) {
			case string:
				if a != "" {
					out.arguments = append(out.arguments, wire.SkillArgument{Name: a})
				}
			case map[string]any:
				name, _ := a["name"].(string)
				if name == "" {
					continue
				}
				desc, _ := a["description"].(string)
				req, _ := a["required"].(bool)
				out.arguments = append(out.arguments, wire.SkillArgument{Name: name, Description: desc, Required: req})
			}
		}
	}
	if d, ok := get(fm, "dependencies").(map[string]any); ok {
		deps := &wire.SkillDependencies{}
		for _, t := range list(d["tools"]) {
			if s, ok := t.(string); ok && s != "" {
				deps.Tools = append(deps.Tools, s)
			}
		}
		for _, p := range list(d["prompts"]) {
			name, _ := p.(string)
			if m, ok := p.(map[string]any); ok {
				name, _ = m["name"].(string)
			}
			if name != "" {
				deps.Prompts = append(deps.Prompts, wire.PromptReference{Type: "ref/prompt", Name: name})
			}
		}
		for _, r := range list(d["resources"]) {
			uri, _ := r.(string)
			if m, ok := r.(map[string]any); ok {
				uri, _ = m["uri"].(string)
			}
			if uri != "" {
				deps.Resources = append(deps.Resources, wire.ResourceReference{Type: "ref/resource", URI: uri})
			}
		}
		if !deps.Empty() {
			out.deps = deps
		}
	}
	return out
}

func get(fm skill.Frontmatter, key string) any { v, _ := fm.Get(key); return v }

func list(v any) []any { l, _ := v.([]any); return l }

// placeholderRE matches an argument placeholder: {{name}}, with optional
// spaces inside the braces.
var placeholderRE = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*\}\}`)

// substitute replaces the placeholders of declared arguments with their
// values; an optional argument that was not passed becomes "". Text that
// merely looks like a placeholder but names no declared argument is left
// as written, so a skill about, say, Jinja templates keeps its examples.
func substitute(body string, declared []wire.SkillArgument, values map[string]string) string {
	if len(declared) == 0 {
		return body
	}
	return placeholderRE.ReplaceAllStringFunc(body, func(m string) string {
		name := placeholderRE.FindStringSubmatch(m)[1]
		for _, a := range declared {
			if a.Name == name {
				return values[name]
			}
		}
		return m
	})
}

// arguments decodes and checks skills/get arguments against a skill's
// declared ones: every value a string (numbers and booleans are taken as
// written), every required argument present, no undeclared argument.
func checkArguments(sk *catalog.Skill, declared []wire.SkillArgument, raw json.RawMessage) (map[string]string, error) {
	values := map[string]string{}
	if len(raw) > 0 && string(raw) != "null" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, nameError(sk.Name, "skills/get: arguments must be an object of argument names to string values")
		}
		for k, v := range m {
			if !slices.ContainsFunc(declared, func(a wire.SkillArgument) bool { return a.Name == k }) {
				return nil, nameError(sk.Name, "skills/get: skill %q declares no argument %q; its arguments are: %s", sk.Name, clip(k), argNames(declared))
			}
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				var x any
				if json.Unmarshal(v, &x) != nil {
					return nil, nameError(sk.Name, "skills/get: argument %q is not valid JSON", k)
				}
				switch x.(type) {
				case float64, bool:
					s = string(v)
				default:
					return nil, nameError(sk.Name, "skills/get: argument %q must be a string", k)
				}
			}
			values[k] = s
		}
	}
	var missing []string
	for _, a := range declared {
		if _, ok := values[a.Name]; a.Required && !ok {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("skills/get: skill %q needs the argument(s) %s; pass them in arguments", sk.Name, strings.Join(missing, ", ")),
			Data:    nameData(sk.Name, map[string]any{"missing": missing})}
	}
	return values, nil
}

func argNames(args []wire.SkillArgument) string {
	if len(args) == 0 {
		return "none"
	}
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}

// getByName answers SEP-2076 skills/get {name, arguments}.
func (srv *Server) getByName(ctx context.Context, name string, args json.RawMessage) (*wire.GetByNameResult, error) {
	return withRetry(ctx, srv, func(snap Snapshot) (*wire.GetByNameResult, error) {
		sk, err := srv.lookupName(snap, wire.MethodGetSkill, name, false)
		if err != nil {
			return nil, err
		}
		m := mapFrontmatter(sk.Frontmatter)
		values, err := checkArguments(sk, m.arguments, args)
		if err != nil {
			return nil, err
		}
		body, err := srv.body(ctx, snap, sk)
		if err != nil {
			return nil, err
		}
		res := &wire.GetByNameResult{
			Description:  sk.Frontmatter.Description(),
			Instructions: substitute(body, m.arguments, values),
			Dependencies: m.deps,
			Files:        []wire.SkillFile{},
		}
		for _, f := range sk.Files {
			if f.URI == sk.URI {
				continue
			}
			res.Files = append(res.Files, wire.SkillFile{Name: relPath(sk, f), URI: f.URI, MIMEType: f.MIMEType})
		}
		return res, nil
	})
}

// DependencyDiagnostic reports a SEP-2076 dependency of a skill that the
// MCP server it is attached to does not provide.
type DependencyDiagnostic struct {
	// Skill is the skill's SKILL.md URI.
	Skill string
	// Kind is "tool" or "prompt".
	Kind string
	// Name is the missing tool or prompt.
	Name string
	// Message says what is wrong and what to do.
	Message string
}

type depState struct {
	mu    sync.Mutex
	diags []DependencyDiagnostic
}

// CheckDependencies checks the dependencies.tools and dependencies.prompts
// of every served skill against the tools and prompts the MCP server
// registers right now (SEP-2076 requires them to exist on the same
// server). Each dangling dependency is logged as a warning and returned;
// [Server.Diagnostics] returns the result of the last check. Call it after
// registering the server's tools and prompts, and again after changing them.
func (srv *Server) CheckDependencies(ctx context.Context) ([]DependencyDiagnostic, error) {
	tools, prompts, err := srv.registered(ctx)
	if err != nil {
		return nil, err
	}
	var out []DependencyDiagnostic
	for _, sk := range srv.src.Snapshot().Skills() {
		m := mapFrontmatter(sk.Frontmatter)
		if m.deps == nil {
			continue
		}
		for _, t := range m.deps.Tools {
			if !tools[t] {
				out = append(out, DependencyDiagnostic{Skill: sk.URI, Kind: "tool", Name: t,
					Message: fmt.Sprintf("%s: dependencies.tools names %q, which this server does not register; register the tool or remove it from the frontmatter", sk.URI, t)})
			}
		}
		for _, p := range m.deps.Prompts {
			if !prompts[p.Name] {
				out = append(out, DependencyDiagnostic{Skill: sk.URI, Kind: "prompt", Name: p.Name,
					Message: fmt.Sprintf("%s: dependencies.prompts names %q, which this server does not register; register the prompt or remove it from the frontmatter", sk.URI, p.Name)})
			}
		}
	}
	for _, d := range out {
		srv.log.Warn("skills: dangling dependency", "skill", d.Skill, "kind", d.Kind, "name", d.Name)
	}
	srv.profiles().deps.mu.Lock()
	srv.profiles().deps.diags = out
	srv.profiles().deps.mu.Unlock()
	return out, nil
}

// Diagnostics returns the dangling dependencies found by the last
// [Server.CheckDependencies].
func (srv *Server) Diagnostics() []DependencyDiagnostic {
	srv.profiles().deps.mu.Lock()
	defer srv.profiles().deps.mu.Unlock()
	return slices.Clone(srv.profiles().deps.diags)
}

// registered lists the server's tools and prompts through an in-memory
// client session: go-sdk exposes them to clients only.
func (srv *Server) registered(ctx context.Context) (tools, prompts map[string]bool, err error) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.mcp.Connect(ctx, st, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("server: checking dependencies: %w", err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "skillport-dependency-check"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("server: checking dependencies: %w", err)
	}
	defer cs.Close()
	tools, prompts = map[string]bool{}, map[string]bool{}
	caps := cs.InitializeResult().Capabilities
	if caps != nil && caps.Tools != nil {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, nil, fmt.Errorf("server: checking dependencies: tools/list: %w", err)
			}
			tools[t.Name] = true
		}
	}
	if caps != nil && caps.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return nil, nil, fmt.Errorf("server: checking dependencies: prompts/list: %w", err)
			}
			prompts[p.Name] = true
		}
	}
	return tools, prompts, nil
}
