//go:build !skillport_no_legacy

package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/wire"
)

// Supporting files of legacy-profile skills. Neither SEP-2076 nor seed 001
// has a manifest with digests, so the list the server gave when the skill
// was loaded (skills/get files[], skills/read references, scripts and
// assets) becomes the held set of the acting window: the only files a read
// may name, each read on the same origin the way its design prescribes, and
// none of them verified.

// readResult is seed 001's skills/read as received. The file lists stay raw
// so that one malformed item is left out on its own.
type readResult struct {
	mcp.ResultBase
	Skill *struct {
		Name         string          `json:"name"`
		Instructions *string         `json:"instructions"`
		Scripts      json.RawMessage `json:"scripts"`
		References   json.RawMessage `json:"references"`
		Assets       json.RawMessage `json:"assets"`
	} `json:"skill"`
}

// referenceResult is seed 001's skills/read_reference as received.
type referenceResult struct {
	mcp.ResultBase
	Content *wire.ReferenceContent `json:"content"`
}

// legacyFile is one supporting file a legacy server listed.
type legacyFile struct {
	// uri is the host's name for the file: the skill root and the listed
	// path, each segment percent-encoded. It is what reads resolve to.
	uri string
	// src is, for SEP-2076, the URI files[] gave: read with resources/read
	// on the same origin, never dereferenced by the host itself.
	src string
	// ref is, for seed 001, the path sent to skills/read_reference.
	ref string
	// path is the listed path as the server wrote it; mime its MIME type.
	path, mime string
}

// legacySet is the readable set of a loaded legacy skill.
type legacySet struct {
	files []legacyFile
	// manifest lists the files as a SEP-2640 manifest would, sizes unknown
	// (-1), so directory listings work the same for every skill.
	manifest []wire.SkillResource
	byURI    map[string]int
}

func newLegacySet() *legacySet { return &legacySet{byURI: map[string]int{}} }

// add records f unless its URI is taken or the set is full; it says why not.
func (s *legacySet) add(f legacyFile) error {
	if _, dup := s.byURI[f.uri]; dup {
		return fmt.Errorf("%q is listed twice; the first is kept", clip(f.path))
	}
	if len(s.files) >= wire.MaxResources {
		return fmt.Errorf("more than %d supporting files; %q and later ones left out", wire.MaxResources, clip(f.path))
	}
	s.byURI[f.uri] = len(s.files)
	s.files = append(s.files, f)
	s.manifest = append(s.manifest, wire.SkillResource{URI: f.uri, Size: -1})
	return nil
}

// lookup finds the listed file a reference names: exactly as the server
// listed it (its path, or for SEP-2076 its URI), else by the URI the
// reference resolved to under the skill root ("" if it did not resolve).
func (s *legacySet) lookup(ref, uri string) *legacyFile {
	for i := range s.files {
		if f := &s.files[i]; ref != "" && (ref == f.path || ref == f.src) {
			return f
		}
	}
	if i, ok := s.byURI[uri]; ok && uri != "" {
		return &s.files[i]
	}
	return nil
}

// legacyPathURI names a listed path under root. The path must be relative,
// its segments neither empty nor dot segments; the result must be a valid
// skill URI strictly inside root.
func legacyPathURI(root, p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "/") {
		return "", errors.New("not a relative path")
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." {
			return "", errors.New("has an empty or dot segment")
		}
		segs[i] = url.PathEscape(s)
	}
	uri := root + "/" + strings.Join(segs, "/")
	if _, err := skilluri.Parse(uri); err != nil {
		return "", err
	}
	if _, ok := skilluri.Within(root, uri); !ok {
		return "", errors.New("not inside the skill root")
	}
	return uri, nil
}

// legacySourceURI checks a SEP-2076 files[] URI. It is only ever sent back
// to the same server as resources/read, so any scheme is acceptable (the
// seed's example is file:///...); it must still be one printable ASCII URI
// of bounded length, as MCP resource URIs are.
func legacySourceURI(s string) error {
	if s == "" || len(s) > skilluri.MaxLength {
		return fmt.Errorf("uri is empty or longer than %d bytes", skilluri.MaxLength)
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return fmt.Errorf("uri %q has a space, control or non-ASCII character", clip(s))
		}
	}
	if !skilluri.HasScheme(s) {
		return fmt.Errorf("uri %q has no scheme", clip(s))
	}
	return nil
}

// checkInstructions applies the per-skill size limit to instructions.
func checkInstructions(body string) error {
	if int64(len(body)) > wire.MaxTotalBytes {
		return fmt.Errorf("%w: instructions larger than %d bytes", ErrDeclined, wire.MaxTotalBytes)
	}
	return nil
}

// rawItems splits a JSON array into its items; absent or null is empty.
func rawItems(raw json.RawMessage, field string) ([]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s is not an array, so none of its files can be read", field)
	}
	return items, nil
}

// decodeLegacyGet takes a SEP-2076 skills/get {name} result apart: the
// instructions, and files[] as the held set under root. Unusable files are
// left out with a note; an unusable result is an error.
func decodeLegacyGet(root string, gr *getResult) (body string, set *legacySet, notes []string, err error) {
	if gr == nil || gr.Instructions == nil {
		return "", nil, nil, fmt.Errorf("%w: skills/get returned no instructions", ErrInvalidEntry)
	}
	body = *gr.Instructions
	if err := checkInstructions(body); err != nil {
		return "", nil, nil, err
	}
	set = newLegacySet()
	items, err := rawItems(gr.Files, "files")
	if err != nil {
		return body, set, []string{err.Error()}, nil
	}
	for i, it := range items {
		var f struct {
			Name     string `json:"name"`
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
		}
		if err := json.Unmarshal(it, &f); err != nil {
			notes = append(notes, fmt.Sprintf("files[%d] is not a file object; left out", i))
			continue
		}
		if err := legacySourceURI(f.URI); err != nil {
			notes = append(notes, fmt.Sprintf("files[%d]: %v; left out", i, err))
			continue
		}
		uri, err := legacyPathURI(root, f.Name)
		if err != nil {
			notes = append(notes, fmt.Sprintf("files[%d]: name %q cannot be a path in the skill (%v); left out", i, clip(f.Name), err))
			continue
		}
		if err := set.add(legacyFile{uri: uri, src: f.URI, path: f.Name, mime: f.MIMEType}); err != nil {
			notes = append(notes, "files: "+err.Error())
		}
	}
	return body, set, notes, nil
}

// decodeLegacyRead takes a seed-001 skills/read result for skill name
// apart: the instructions, and its scripts, references and assets as the
// held set under root, read later through skills/read_reference.
func decodeLegacyRead(name, root string, rr *readResult) (body string, set *legacySet, notes []string, err error) {
	if rr == nil || rr.Skill == nil || rr.Skill.Instructions == nil {
		return "", nil, nil, fmt.Errorf("%w: skills/read returned no skill instructions", ErrInvalidEntry)
	}
	if rr.Skill.Name != "" && rr.Skill.Name != name {
		return "", nil, nil, fmt.Errorf("%w: skills/read for %q answered with skill %q", ErrInvalidEntry, name, clip(rr.Skill.Name))
	}
	body = *rr.Skill.Instructions
	if err := checkInstructions(body); err != nil {
		return "", nil, nil, err
	}
	set = newLegacySet()
	for _, list := range []struct {
		field string
		raw   json.RawMessage
	}{{"references", rr.Skill.References}, {"scripts", rr.Skill.Scripts}, {"assets", rr.Skill.Assets}} {
		items, err := rawItems(list.raw, list.field)
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		for i, it := range items {
			var f struct {
				Path string `json:"path"`
			}
			if err := json.Unmarshal(it, &f); err != nil {
				notes = append(notes, fmt.Sprintf("%s[%d] is not a file object; left out", list.field, i))
				continue
			}
			uri, err := legacyPathURI(root, f.Path)
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s[%d]: path %q cannot be a path in the skill (%v); left out", list.field, i, clip(f.Path), err))
				continue
			}
			if err := set.add(legacyFile{uri: uri, ref: f.Path, path: f.Path}); err != nil {
				notes = append(notes, list.field+": "+err.Error())
			}
		}
	}
	return body, set, notes, nil
}

// referenceData is the content of a skills/read_reference result: text or
// blob, not both.
func referenceData(res *referenceResult) (data []byte, mime string, err error) {
	if res == nil || res.Content == nil {
		return nil, "", errors.New("no content")
	}
	c := res.Content
	switch {
	case c.Text != nil && len(c.Blob) > 0:
		return nil, "", errors.New("content has both text and blob")
	case c.Text != nil:
		return []byte(*c.Text), c.MIMEType, nil
	}
	if c.Blob == nil {
		// An empty blob is left out by encoders that omit empty values.
		return []byte{}, c.MIMEType, nil
	}
	return c.Blob, c.MIMEType, nil
}

// listed implements heldFiles.
func (s *legacySet) listed() []wire.SkillResource { return s.manifest }

// read implements heldFiles: a listed file is read on the skill's origin.
func (s *legacySet) read(ctx context.Context, l *Loaded, ref, uri string) (*File, bool, error) {
	f := s.lookup(ref, uri)
	if f == nil {
		return nil, false, nil
	}
	file, err := l.readLegacy(ctx, l.h.byLabel[l.Entry.Origin], f)
	return file, true, err
}

// readLegacy reads a listed supporting file of a legacy skill on its own
// origin: SEP-2076 files with resources/read of the listed URI, seed-001
// files with skills/read_reference. The bytes count toward the skill's
// 16 MiB retrieval limit and are never marked verified.
func (l *Loaded) readLegacy(ctx context.Context, o *originState, f *legacyFile) (*File, error) {
	e := l.Entry
	rel, _ := skilluri.Within(e.Root, f.uri)
	if f.src != "" {
		data, mime, err := l.fetch(ctx, o, f.src, nil)
		if err != nil {
			return nil, err
		}
		if mime == "" {
			mime = f.mime
		}
		return &File{URI: f.src, Path: rel, Data: data, MIMEType: mime}, nil
	}
	sess, err := o.sess()
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, l.h.opts.CallTimeout)
	defer cancel()
	res, err := mcp.CallCustomMethod[*wire.ReadReferenceParams, *referenceResult](callCtx, sess, wire.MethodReadReference,
		&wire.ReadReferenceParams{Name: e.Name, Reference: f.ref})
	if err != nil {
		if callCtx.Err() != nil {
			return nil, fmt.Errorf("%w: %s: skills/read_reference %s %s got no answer within %v", ErrUnavailable, e.Origin, e.Name, f.ref, l.h.opts.CallTimeout)
		}
		return nil, fmt.Errorf("%s: skills/read_reference %s %s: %w", e.Origin, e.Name, f.ref, err)
	}
	data, mime, err := referenceData(res)
	if err != nil {
		return nil, &VerificationError{Origin: e.Origin, URI: f.uri, Reason: ReasonContents, Detail: "skills/read_reference: " + err.Error()}
	}
	if err := l.account(o, f.uri, int64(len(data))); err != nil {
		return nil, err
	}
	return &File{URI: f.uri, Path: rel, Data: data, MIMEType: mime}, nil
}
