//go:build !skillport_no_seed001

package skillserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/jsonobj"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/sandbox"
	"github.com/skillport/skillport/wire"
)

// ProfileSeed001 adds skills/read and skills/read_reference, and
// skills/execute when [Options.Scripts] is set.
const ProfileSeed001 Profile = "seed001"

func init() { register(registration{3, ProfileSeed001, newSeed001Part}) }

// seed001Part is seed 001's part of the hook.
type seed001Part struct {
	noPart
	srv     *Server
	execute bool // Options.Scripts is set
}

func newSeed001Part(ps *profileSet) part {
	return seed001Part{srv: ps.srv, execute: ps.srv.opts.Scripts != nil}
}

func (seed001Part) legacy() bool      { return true }
func (seed001Part) runsScripts() bool { return true }

func (ps seed001Part) capability(c *wire.LegacyCapability) { c.Scripts = ps.execute }

func (seed001Part) reading() (reading, int) {
	return reading{"through the skills capability",
		"List them with skills/list, read one with skills/read {name} and its references with skills/read_reference."}, 3
}

// register installs skills/read, skills/read_reference and skills/execute.
func (ps seed001Part) register() error {
	srv, s := ps.srv, ps.srv.mcp
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodReadSkill, func(ctx context.Context, _ *mcp.ServerSession, p *wire.NameParams) (*wire.ReadResult, error) {
		if p == nil {
			p = &wire.NameParams{}
		}
		return srv.readSkill(ctx, p)
	}); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodReadReference, func(ctx context.Context, _ *mcp.ServerSession, p *wire.ReadReferenceParams) (*wire.ReadReferenceResult, error) {
		if p == nil {
			p = &wire.ReadReferenceParams{}
		}
		return srv.readReference(ctx, p)
	}); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	// Registered even when disabled, so that every transport answers with
	// an error that says how to enable it (go-sdk's HTTP handler would
	// otherwise reject the unknown method with a bare HTTP 400). Not
	// -32601: go-sdk rewrites every such message to "method not found".
	if err := mcp.AddReceivingCustomMethod(s, wire.MethodExecute, func(ctx context.Context, _ *mcp.ServerSession, p *wire.ExecuteParams) (*wire.ExecuteResult, error) {
		if !ps.execute {
			name, script := "", ""
			if p != nil {
				name, script = p.Name, p.Script
			}
			return nil, scriptFailed(name, script, "disabled",
				"skills/execute is disabled on this server: scripts run only when the operator enables them (skillport serve --allow-scripts), and then only in a sandbox")
		}
		if p == nil {
			p = &wire.ExecuteParams{}
		}
		return srv.execute(ctx, p)
	}); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// skillPriority is the annotation priority of a skill's instructions, the
// same the server gives a SKILL.md in resources/list.
const skillPriority = 0.8

// readSkill answers seed 001's skills/read {name}.
func (srv *Server) readSkill(ctx context.Context, p *wire.NameParams) (*wire.ReadResult, error) {
	return withRetry(ctx, srv, func(snap published.Snapshot) (*wire.ReadResult, error) {
		sk, err := srv.lookupName(snap, wire.MethodReadSkill, p.Name, true)
		if err != nil {
			return nil, err
		}
		body, err := srv.body(ctx, snap, sk)
		if err != nil {
			return nil, err
		}
		m := mapFrontmatter(sk.Frontmatter)
		full := wire.FullSkill{
			Name:         sk.Name,
			Title:        m.title,
			Description:  sk.Frontmatter.Description(),
			Instructions: body,
			Scripts:      []wire.FileRef{},
			References:   []wire.FileRef{},
			Assets:       []wire.FileRef{},
			Metadata:     metadata(sk),
			Keywords:     m.tags,
		}
		for _, f := range sk.Files {
			rel := relPath(sk, f)
			dir, _, nested := strings.Cut(rel, "/")
			if !nested {
				continue
			}
			ref := wire.FileRef{Name: path.Base(rel), Description: "", Path: rel}
			switch dir {
			case "scripts":
				full.Scripts = append(full.Scripts, ref)
			case "references":
				full.References = append(full.References, ref)
			case "assets":
				full.Assets = append(full.Assets, ref)
			}
		}
		prio := skillPriority
		full.Annotations = &wire.Annotations{Audience: []string{"assistant"}, Priority: &prio}
		if f := snap.File(sk.URI); f != nil && !f.ModTime.IsZero() {
			full.Annotations.LastModified = f.ModTime.UTC().Format(time.RFC3339)
		}
		return &wire.ReadResult{Skill: full}, nil
	})
}

// metadata is frontmatter.metadata with license added, keys in the
// order written.
func metadata(sk *catalog.Skill) json.RawMessage {
	fm := sk.Frontmatter.JSON()
	meta := rawField(fm, "metadata")
	if len(meta) == 0 || meta[0] != '{' {
		meta = json.RawMessage("{}")
	}
	if lic := rawField(fm, "license"); lic != nil && rawField(meta, "license") == nil {
		inner := strings.TrimSpace(string(meta[1 : len(meta)-1]))
		sep := ","
		if inner == "" {
			sep = ""
		}
		meta = json.RawMessage("{" + inner + sep + `"license":` + string(lic) + "}")
	}
	if string(meta) == "{}" {
		return nil
	}
	return meta
}

// resolveFile finds a file of sk by reference: an exact path relative
// to the skill root, else a unique file name, else a unique file name
// without its extension. under restricts the search to one top-level
// directory ("" for the whole skill).
func resolveFile(sk *catalog.Skill, ref, under string) (*catalog.File, []string) {
	type cand struct {
		f   *catalog.File
		rel string
	}
	var all []cand
	for _, f := range sk.Files {
		rel := relPath(sk, f)
		if under != "" && !strings.HasPrefix(rel, under+"/") {
			continue
		}
		all = append(all, cand{f, rel})
	}
	for _, c := range all {
		if c.rel == ref {
			return c.f, nil
		}
	}
	for _, match := range []func(string) string{
		path.Base,
		func(rel string) string { b := path.Base(rel); return strings.TrimSuffix(b, path.Ext(b)) },
	} {
		var hits []cand
		for _, c := range all {
			if match(c.rel) == ref {
				hits = append(hits, c)
			}
		}
		if len(hits) == 1 {
			return hits[0].f, nil
		}
		if len(hits) > 1 {
			paths := make([]string, len(hits))
			for i, h := range hits {
				paths[i] = h.rel
			}
			return nil, paths
		}
	}
	return nil, nil
}

// badReference reports whether a reference could only be an attempt to
// leave the skill, which gets the same error as an unknown one (no path
// information either way).
func badReference(ref string) bool {
	if ref == "" || len(ref) > 1024 || !utf8.ValidString(ref) || strings.ContainsAny(ref, "\\\x00") || strings.HasPrefix(ref, "/") {
		return true
	}
	for seg := range strings.SplitSeq(ref, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

func (srv *Server) referenceError(name, ref, format string, args ...any) *jsonrpc.Error {
	if len(ref) > 256 {
		ref = ref[:256]
	}
	e := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...), Data: nameData(name, map[string]any{"reference": ref})}
	if srv.opts.LegacyErrorCodes {
		e.Code = wire.CodeReferenceNotFound
	}
	return e
}

// readReference answers seed 001's skills/read_reference {name, reference}.
func (srv *Server) readReference(ctx context.Context, p *wire.ReadReferenceParams) (*wire.ReadReferenceResult, error) {
	return withRetry(ctx, srv, func(snap published.Snapshot) (*wire.ReadReferenceResult, error) {
		sk, err := srv.lookupName(snap, wire.MethodReadReference, p.Name, true)
		if err != nil {
			return nil, err
		}
		var f *catalog.File
		var amb []string
		if !badReference(p.Reference) {
			f, amb = resolveFile(sk, p.Reference, "")
		}
		if len(amb) > 0 {
			return nil, srv.referenceError(sk.Name, p.Reference, "skills/read_reference: %q matches several files of skill %q (%s); pass the path relative to the skill root", clip(p.Reference), sk.Name, strings.Join(amb, ", "))
		}
		if f == nil {
			return nil, srv.referenceError(sk.Name, p.Reference, "skills/read_reference: skill %q has no file %q; pass a path relative to the skill root as skills/read lists it (e.g. references/guide.md)", sk.Name, clip(p.Reference))
		}
		data, _, err := srv.readSkillFile(ctx, snap, f)
		if err != nil {
			return nil, err
		}
		c := wire.ReferenceContent{URI: f.URI, MIMEType: f.MIMEType}
		if f.Text {
			s := string(data)
			c.Text = &s
		} else {
			c.Blob = data
			if c.Blob == nil {
				c.Blob = []byte{}
			}
		}
		return &wire.ReadReferenceResult{Content: c}, nil
	})
}

// execute answers seed 001's skills/execute. It is registered only
// when the operator enabled scripts; it runs a script listed in the skill's
// manifest, from a copy of the snapshot's verified bytes, only through the
// sandbox.
func (srv *Server) execute(ctx context.Context, p *wire.ExecuteParams) (*wire.ExecuteResult, error) {
	runID := newRunID()
	log := srv.log.With("run", runID, "skill", p.Name, "script", p.Script)
	res, err := withRetry(ctx, srv, func(snap published.Snapshot) (*wire.ExecuteResult, error) {
		sk, err := srv.lookupName(snap, wire.MethodExecute, p.Name, true)
		if err != nil {
			return nil, err
		}
		scriptErr := func(format string, args ...any) *jsonrpc.Error {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...), Data: nameData(sk.Name, map[string]any{"script": clipData(p.Script)})}
		}
		if len(sk.Files) == 0 {
			return nil, scriptErr("skills/execute: skill %q publishes no manifest (its content is dynamic), so none of its files can be run", sk.Name)
		}
		var f *catalog.File
		var amb []string
		if !badReference(p.Script) {
			f, amb = resolveFile(sk, p.Script, "scripts")
		}
		switch {
		case len(amb) > 0:
			return nil, scriptErr("skills/execute: %q matches several scripts of skill %q (%s); pass the path, e.g. %s", clip(p.Script), sk.Name, strings.Join(amb, ", "), amb[0])
		case f == nil:
			return nil, scriptErr("skills/execute: skill %q has no script %q; scripts are the files under scripts/ that skills/read lists", sk.Name, clip(p.Script))
		}
		var stdin []byte
		if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
			if !json.Valid(p.Arguments) {
				return nil, scriptErr("skills/execute: arguments must be JSON")
			}
			stdin = p.Arguments
		}
		dir, err := os.MkdirTemp("", "skillport-exec-")
		if err != nil {
			log.Error("skills/execute: cannot create a directory for the skill copy", "err", err)
			return nil, scriptFailed(sk.Name, p.Script, "", "the server cannot prepare the skill for running")
		}
		defer os.RemoveAll(dir)
		for _, sf := range sk.Files {
			data, _, err := srv.readSkillFile(ctx, snap, sf)
			if err != nil {
				return nil, err
			}
			rel := relPath(sk, sf)
			if rel == "" || badReference(rel) {
				continue
			}
			dst := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, scriptFailed(sk.Name, p.Script, "", "the server cannot prepare the skill for running")
			}
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				return nil, scriptFailed(sk.Name, p.Script, "", "the server cannot prepare the skill for running")
			}
		}
		script := relPath(sk, f)
		log.Info("skills/execute: running", "uri", f.URI, "digest", f.Digest)
		r, err := srv.opts.Scripts.Run(ctx, sandbox.Spec{SkillDir: dir, Script: script, Stdin: stdin})
		if err != nil {
			log.Warn("skills/execute: not run", "err", err)
			switch {
			case errors.Is(err, sandbox.ErrUnavailable):
				return nil, scriptFailed(sk.Name, script, "sandbox unavailable", "the sandbox cannot be set up on this server, so the script was not run (scripts never run unsandboxed)")
			case errors.Is(err, sandbox.ErrNoInterpreter):
				return nil, scriptFailed(sk.Name, script, "no interpreter", fmt.Sprintf("no interpreter for %s inside the sandbox", script))
			case errors.Is(err, sandbox.ErrBusy):
				return nil, scriptFailed(sk.Name, script, "busy", "the server is running as many scripts as it allows at once; try again when one has finished")
			case errors.Is(err, sandbox.ErrSkillTooLarge):
				return nil, scriptFailed(sk.Name, script, "skill too large", "the skill is too large to run")
			case ctx.Err() != nil:
				return nil, scriptFailed(sk.Name, script, "cancelled", "the request was cancelled")
			}
			return nil, scriptFailed(sk.Name, script, "", "the script could not be started")
		}
		log.Info("skills/execute: finished", "exit", r.ExitCode, "reason", r.Reason, "duration", r.Duration, "outputs", len(r.Outputs))
		if r.Reason != "" {
			e := scriptFailed(sk.Name, script, r.Reason, fmt.Sprintf("Script execution failed: %s stopped at the sandbox's %s limit", script, r.Reason))
			return nil, e
		}
		return executeResult(runID, r), nil
	})
	return res, err
}

func clipData(s string) string {
	if len(s) > 256 {
		return s[:256]
	}
	return s
}

// scriptFailed is seed 001's -32003, with the reason in data.
func scriptFailed(name, script, reason, msg string) *jsonrpc.Error {
	extra := map[string]any{"script": clipData(script)}
	if reason != "" {
		extra["reason"] = reason
	}
	return &jsonrpc.Error{Code: wire.CodeScriptFailed, Message: msg, Data: nameData(name, extra)}
}

func newRunID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// executeResult renders a finished run: its output as text, sanitised, and
// each file it left as an embedded resource under a URI that names the run,
// never a host path.
func executeResult(runID string, r *sandbox.Result) *wire.ExecuteResult {
	res := &wire.ExecuteResult{Content: []wire.ExecuteContent{}, IsError: r.ExitCode != 0}
	text := sanitizeOutput(r.Stdout)
	if len(r.Stderr) > 0 {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "[stderr]\n" + sanitizeOutput(r.Stderr)
	}
	if r.ExitCode != 0 {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += fmt.Sprintf("[exit status %d]", r.ExitCode)
	}
	if r.Truncated {
		text += "\n[output truncated at the sandbox's limit]"
	}
	if text != "" {
		res.Content = append(res.Content, wire.ExecuteContent{Type: "text", Text: text})
	}
	for _, o := range r.Outputs {
		out := &wire.OutputResource{URI: "skill-run://" + runID + "/" + escapePath(o.Path), Name: path.Base(o.Path), MIMEType: o.MIMEType}
		if utf8.Valid(o.Data) && !strings.ContainsRune(string(o.Data), 0) && len(o.Data) > 0 {
			s := string(o.Data)
			out.Text = &s
		} else {
			out.Blob = o.Data
			if out.Blob == nil {
				out.Blob = []byte{}
			}
		}
		res.Content = append(res.Content, wire.ExecuteContent{Type: "resource", Resource: out})
	}
	if r.OutputsTruncated {
		res.Content = append(res.Content, wire.ExecuteContent{Type: "text", Text: "[some output files were left out or cut at the sandbox's limits]"})
	}
	return res
}

func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// sanitizeOutput makes script output safe to hand to a client and a model:
// valid UTF-8, no control characters but tab, newline and carriage return,
// no bidi overrides or tag characters.
func sanitizeOutput(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return -1
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r >= 0xe0000 && r <= 0xe007f:
			return -1
		}
		return r
	}, s)
}

// rawField returns a top-level field of a JSON object as raw bytes, keys
// and nested order as written.
func rawField(obj []byte, key string) json.RawMessage {
	fs, _ := jsonobj.Fields(obj)
	for _, f := range fs {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}
