//go:build !skillport_no_sep2076 || !skillport_no_seed001

package skillserver

// What the two legacy profiles that select skills by name (SEP-2076's
// skills/get {name}, seed 001's skills/read, read_reference and execute)
// share: the lookup by name, the instructions, the frontmatter mapping.
// Built while either of them is.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/skillport/skillport/internal/published"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/wire"
)

// nameIndex maps frontmatter names to the skills that carry them, for one
// snapshot.
type nameIndex struct {
	id     string
	byName map[string][]*catalog.Skill
}

func (srv *Server) byName(snap published.Snapshot) map[string][]*catalog.Skill {
	names := kept[namesCache](srv.profiles(), namesKey{})
	if ix := names.Load(); ix != nil && ix.id == snap.ID() {
		return ix.byName
	}
	m := map[string][]*catalog.Skill{}
	for _, sk := range snap.Skills() {
		m[sk.Name] = append(m[sk.Name], sk)
	}
	names.Store(&nameIndex{id: snap.ID(), byName: m})
	return m
}

// namesKey keys the server's namesCache in its profileSet.
type namesKey struct{}

// kept returns what ps keeps under key, a new T the first time.
func kept[T any](ps *profileSet, key any) *T {
	if v, ok := ps.state.Load(key); ok {
		return v.(*T)
	}
	v, _ := ps.state.LoadOrStore(key, new(T))
	return v.(*T)
}

// namesCache holds the last nameIndex.
type namesCache = atomic.Pointer[nameIndex]

// lookupName resolves a skill by name: unknown and ambiguous names are
// -32602 errors, or seed 001's -32002 for unknown names
// when legacy codes are on.
func (srv *Server) lookupName(snap published.Snapshot, method, name string, legacyCodes bool) (*catalog.Skill, error) {
	if name == "" {
		return nil, nameError(name, "%s: the name parameter is missing or empty; pass a skill name as skills/list returns it", method)
	}
	cands := srv.byName(snap)[name]
	switch len(cands) {
	case 0:
		e := nameError(name, "%s: no skill named %q is served here; list the skills with skills/list", method, clip(name))
		if legacyCodes && srv.opts.LegacyErrorCodes {
			e.Code, e.Message = wire.CodeSkillNotFound, "Skill not found: "+clip(name)
		}
		return nil, e
	case 1:
		return cands[0], nil
	}
	uris := make([]string, len(cands))
	for i, c := range cands {
		uris[i] = c.URI
	}
	// Point at a way out this server serves: skills/get by uri is the
	// Skills Extension's, absent when only legacy profiles are.
	how := "use skills/get with one of the URIs in data.candidates"
	if !srv.ext {
		how = "this server's profiles select skills by name only, so ask its operator to rename one of data.candidates or to serve the sep2640 profile (skills/get by uri)"
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("%s: %d skills are named %q; names are not unique on this server: %s", method, len(cands), clip(name), how),
		Data:    nameData(name, map[string]any{"candidates": uris})}
}

func clip(s string) string {
	if len(s) > 100 {
		return show(s)
	}
	return s
}

// relPath returns a file's path relative to its skill's root.
func relPath(sk *catalog.Skill, f *catalog.File) string {
	rest, ok := strings.CutPrefix(f.URI, sk.Root+"/")
	if !ok {
		return ""
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		if d, err := url.PathUnescape(s); err == nil {
			segs[i] = d
		}
	}
	return strings.Join(segs, "/")
}

// readSkillFile returns a file's bytes from snap, re-reading from a fresh
// snapshot when the file changed under it; the caller then answers from the
// returned snapshot.
func (srv *Server) readSkillFile(ctx context.Context, snap published.Snapshot, f *catalog.File) ([]byte, published.Snapshot, error) {
	data, err := snap.ReadFile(ctx, f)
	if errors.Is(err, catalog.ErrChanged) {
		fresh, rerr := srv.refresh(ctx, snap)
		if rerr != nil {
			srv.log.Error("cannot refresh the skills after a file changed", "uri", f.URI, "err", rerr)
			return nil, nil, internalError(f.URI, "%s changed on the server and the skills could not be re-indexed; try again later", show(f.URI))
		}
		return nil, fresh, errRetry
	}
	if err != nil {
		srv.log.Error("cannot read a skill file", "uri", f.URI, "err", err)
		return nil, nil, internalError(f.URI, "cannot read %s on the server", show(f.URI))
	}
	return data, snap, nil
}

// errRetry asks a by-name handler to answer again from a fresh snapshot.
var errRetry = errors.New("snapshot changed")

// withRetry runs fn against the caller's view of the current snapshot
// (so a lookup by name finds only what the caller may see), and once more
// against a fresh one if a file changed under it.
func withRetry[T any](ctx context.Context, srv *Server, fn func(published.Snapshot) (T, error)) (T, error) {
	var zero T
	snap, err := srv.snapshot(ctx)
	if err != nil {
		return zero, err
	}
	v, err := fn(snap)
	if errors.Is(err, errRetry) {
		if snap, err = srv.snapshot(ctx); err != nil {
			return zero, err
		}
		v, err = fn(snap)
		if errors.Is(err, errRetry) {
			return zero, internalError("", "the skills are changing on the server; try again shortly")
		}
	}
	return v, err
}

// body returns the instructions of a skill: its SKILL.md without the
// frontmatter, byte for byte.
func (srv *Server) body(ctx context.Context, snap published.Snapshot, sk *catalog.Skill) (string, error) {
	f := snap.File(sk.URI)
	if f == nil {
		return "", internalError(sk.URI, "%s is listed but not served; try again shortly", show(sk.URI))
	}
	data, _, err := srv.readSkillFile(ctx, snap, f)
	if err != nil {
		return "", err
	}
	doc, perr := skill.Parse(data)
	if perr != nil {
		srv.log.Error("a published SKILL.md no longer parses", "uri", sk.URI, "err", perr)
		return "", internalError(sk.URI, "%s cannot be parsed on the server", show(sk.URI))
	}
	return string(doc.Body), nil
}

// legacyFields are the SEP-2076 fields a SKILL.md frontmatter supplies
// (seed 001 reads its title and tags from them too).
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
