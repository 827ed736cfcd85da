//go:build !skillport_no_sep2076

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
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/wire"
)

// ProfileSEP2076 adds the SEP-2076 fields to skills/list entries,
// skills/get by name, and the top-level "skills" capability.
const ProfileSEP2076 Profile = "sep2076"

func init() { register(registration{2, ProfileSEP2076, newSEP2076Part}) }

// sep2076Part is SEP-2076's part of the hook.
type sep2076Part struct {
	noPart
	srv *Server
}

func newSEP2076Part(ps *profileSet) part { return sep2076Part{srv: ps.srv} }

func (sep2076Part) legacy() bool { return true }

func (p sep2076Part) getByName(ctx context.Context, name string, args json.RawMessage) (*getResponse, bool, error) {
	res, err := p.srv.getByName(ctx, name, args)
	if err != nil {
		return nil, true, err
	}
	return &getResponse{other: func(b mcp.ResultBase) ([]byte, error) {
		res.ResultBase = b
		return json.Marshal(res)
	}}, true, nil
}

// checkURI: without params, say both forms.
func (sep2076Part) checkURI(uri string, absent bool) error {
	if uri == "" && absent {
		return invalidParams("", "skills/get needs params {\"uri\": <URI of a skill's SKILL.md>} (Skills Extension) or {\"name\": <skill name>, \"arguments\": {...}} (SEP-2076)")
	}
	return nil
}

func (sep2076Part) entry(sk *catalog.Skill, le wire.ListEntry) wire.ListEntry {
	m := mapFrontmatter(sk.Frontmatter)
	le.Title, le.Version, le.Tags, le.Arguments = m.title, m.version, m.tags, m.arguments
	if !m.deps.Empty() {
		le.Dependencies = m.deps
	}
	return le
}

func (sep2076Part) reading() (reading, int) {
	return reading{"through the skills capability (skills/list, skills/get)",
		"List them with skills/list and get one's instructions with skills/get {name}."}, 2
}

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
	return withRetry(ctx, srv, func(snap published.Snapshot) (*wire.GetByNameResult, error) {
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

// DependencyDiagnostic, of the sep2076 profile, reports a SEP-2076
// dependency of a skill that the MCP server it is attached to does not
// provide.
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

// depKey keys the server's depState in its profileSet.
type depKey struct{}

func (srv *Server) deps() *depState { return kept[depState](srv.profiles(), depKey{}) }

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
	d := srv.deps()
	d.mu.Lock()
	d.diags = out
	d.mu.Unlock()
	return out, nil
}

// Diagnostics returns the dangling dependencies found by the last
// [Server.CheckDependencies].
func (srv *Server) Diagnostics() []DependencyDiagnostic {
	d := srv.deps()
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.diags)
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
