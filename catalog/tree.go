package catalog

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/skillport/skillport/skill"
)

// MIMEType is the media type published for a file named name: from the
// extension when it is known (the same table wherever skills are
// published, never the machine's /etc/mime.types), else text/plain for
// UTF-8 text and application/octet-stream for anything else.
func MIMEType(name string, text bool) string { return mimeType(name, text) }

// TextType reports whether files named name are text by their extension
// alone (a text/* type, or JSON, XML, YAML, TOML, SQL, SVG), for a
// publisher that must decide how a file travels before reading it.
func TextType(name string) bool {
	t, ok := mimeTypes[strings.ToLower(path.Ext(name))]
	if !ok {
		return false
	}
	switch t {
	case "application/xml", "application/json", "application/yaml", "application/toml", "application/sql", "image/svg+xml":
		return true
	}
	return strings.HasPrefix(t, "text/")
}

// NewFile describes content published at uri, for a source that holds
// skills somewhere else than in a tree (a database, a registry): size,
// SHA-256 digest, media type and whether it travels as text are computed
// as [Open] computes them. Path is the URI's path, decoded.
func NewFile(uri string, content []byte) *File {
	sum := sha256.Sum256(content)
	_, rest, _ := strings.Cut(uri, "://")
	name := decodeSegment(path.Base(rest))
	text := utf8.Valid(content) && !slices.Contains(content, 0)
	return &File{URI: uri, Path: decodeSegment(rest), Name: name, Size: int64(len(content)),
		Digest: "sha256:" + hex.EncodeToString(sum[:]), MIMEType: mimeType(name, text), Text: text}
}

// NewSkill describes the skill whose root URI is root ("skill://acme/pdf")
// from its files, given by path relative to the root ("SKILL.md",
// "references/FORMS.md"). SKILL.md must be among them, parse, and name the
// skill as the last segment of root. The files are published as [NewFile]
// describes them; the content itself stays with the caller, who serves it
// from its source's ReadFile.
func NewSkill(root string, files map[string][]byte) (*Skill, error) {
	scheme, rest, ok := strings.Cut(root, "://")
	if !ok || scheme == "" || rest == "" || strings.HasSuffix(rest, "/") {
		return nil, fmt.Errorf("catalog: skill root %q: want scheme://path, such as skill://acme/pdf", root)
	}
	md, ok := files[FileNameSKILL]
	if !ok {
		return nil, fmt.Errorf("catalog: skill %s has no %s", root, FileNameSKILL)
	}
	doc, err := skill.Parse(md)
	if err != nil {
		return nil, fmt.Errorf("catalog: %s/%s: %w", root, FileNameSKILL, err)
	}
	name := decodeSegment(path.Base(rest))
	if got, _ := doc.Frontmatter.String("name"); got != name {
		return nil, fmt.Errorf("catalog: %s/%s: frontmatter name %q must equal the last segment of the skill root, %q", root, FileNameSKILL, got, name)
	}
	uri := root + "/" + FileNameSKILL
	s := &Skill{URI: uri, Root: root, Path: decodeSegment(rest), Name: name, Dir: decodeSegment(rest), Frontmatter: doc.Frontmatter}
	for rel, content := range files {
		segs := strings.Split(rel, "/")
		for i, seg := range segs {
			if seg == "" || seg == "." || seg == ".." {
				return nil, fmt.Errorf("catalog: skill %s: file %q: use a relative path without empty, \".\" or \"..\" segments", root, rel)
			}
			segs[i] = escapeSegment(seg)
		}
		f := NewFile(root+"/"+strings.Join(segs, "/"), content)
		s.Files = append(s.Files, f)
		s.Size += f.Size
	}
	slices.SortFunc(s.Files, func(a, b *File) int {
		if (a.URI == uri) != (b.URI == uri) {
			if a.URI == uri {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.URI, b.URI)
	})
	return s, nil
}

// DirsOf derives the directory resources of published skills from their
// files' URIs, as [Catalog.Dir] serves them for a tree: every level from
// scheme://<first segment> down to each file's parent, with its direct
// children sorted by name, and the innermost skill each directory belongs
// to. A publisher that re-publishes skills from elsewhere uses it instead
// of building its own tree. Skills without files contribute nothing.
func DirsOf(skills []*Skill) map[string]*Dir {
	dirs := map[string]*Dir{}
	byRoot := map[string]*Skill{}
	seen := map[string]map[string]bool{}
	for _, sk := range skills {
		byRoot[sk.Root] = sk
		for _, f := range sk.Files {
			scheme, rest, ok := strings.Cut(f.URI, "://")
			if !ok {
				continue
			}
			prefix := scheme + "://"
			parts := strings.Split(rest, "/")
			for i := 1; i < len(parts); i++ {
				dirURI := prefix + strings.Join(parts[:i], "/")
				d := dirs[dirURI]
				if d == nil {
					d = &Dir{URI: dirURI, Path: decodeSegment(strings.Join(parts[:i], "/"))}
					dirs[dirURI] = d
					seen[dirURI] = map[string]bool{}
				}
				child := dirURI + "/" + parts[i]
				if seen[dirURI][child] {
					continue
				}
				seen[dirURI][child] = true
				c := Child{URI: child, Name: decodeSegment(parts[i])}
				if i == len(parts)-1 {
					c.File = f
				}
				d.Children = append(d.Children, c)
			}
		}
	}
	for uri, d := range dirs {
		slices.SortFunc(d.Children, func(a, b Child) int { return cmp.Compare(a.Name, b.Name) })
		for u := uri; ; {
			if sk := byRoot[u]; sk != nil {
				d.Skill = sk
				break
			}
			i := strings.LastIndexByte(u, '/')
			if i < 0 || strings.HasSuffix(u[:i], ":/") {
				break
			}
			u = u[:i]
		}
	}
	return dirs
}

// ContentID identifies what a publisher serves: two sets of skills and
// files with the same URIs, frontmatter, digests, sizes and text flags
// have the same ID, so a change of ID is a change clients must hear about;
// an executable [File.Mode] counts too (the web catalog's archives carry it),
// while a file without one hashes as it did before modes were recorded.
// skills and files must be sorted by URI.
func ContentID(skills []*Skill, files []*File) string {
	h := sha256.New()
	for _, sk := range skills {
		fmt.Fprintf(h, "%s\x00", sk.URI)
		h.Write(sk.Frontmatter.JSON())
		h.Write([]byte{'\n'})
	}
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%t", f.URI, f.Digest, f.Size, f.Text)
		if f.Mode&0o111 != 0 { // as in a catalog's ID: an archive holds the mode
			h.Write([]byte("\x00x"))
		}
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// decodeSegment percent-decodes a URI path for display, leaving it as it
// is when it is not valid percent-encoding.
func decodeSegment(s string) string {
	if d, err := url.PathUnescape(s); err == nil {
		return d
	}
	return s
}
