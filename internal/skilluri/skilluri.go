// Package skilluri parses and resolves the resource URIs of skills served
// over MCP (SEP-2640), as a host receives them from an untrusted server or
// from a model.
//
// A skill URI has the form scheme://<skill-path>/<file-path>. The first
// skill-path segment sits in the URI authority; the skill root is the
// SKILL.md URI without "/SKILL.md". Go's net/url accepts many forms that
// would let a server or a model escape a skill root (percent-encoded dots,
// backslashes, userinfo, opaque URIs; see the project checklist, section
// 1.2), so this package never calls url.Parse: it checks the raw string
// segment by segment and keeps that string as the identity.
package skilluri

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/skillport/skillport/skill"
)

// Limits on URIs accepted from a server or a model.
const (
	MaxLength   = skill.MaxURILength
	MaxSegments = skill.MaxURISegments
)

// SkillFile is the name of the file that makes a directory a skill.
const SkillFile = skill.FileName

// Sentinel errors; test with errors.Is.
var (
	// ErrInvalid marks a string that is not an acceptable skill resource URI.
	ErrInvalid = errors.New("invalid skill URI")
	// ErrOutsideRoot marks a reference that resolves outside the skill root.
	ErrOutsideRoot = errors.New("outside the skill root")
	// ErrNotSkill marks a URI that does not name a SKILL.md.
	ErrNotSkill = errors.New("not the URI of a SKILL.md")
)

// foreignSchemes name locations on the host or the network. A reference in
// one of them is never a skill file, whatever the server claims.
var foreignSchemes = map[string]bool{
	"file": true, "http": true, "https": true, "ftp": true, "data": true,
	"javascript": true, "vbscript": true, "blob": true, "about": true,
	"jar": true, "ws": true, "wss": true, "mailto": true, "tel": true,
}

// URI is a validated skill resource URI.
type URI struct {
	// Raw is the URI exactly as received; it is the identity, never re-encoded.
	Raw string
	// Scheme is the lower-case scheme, e.g. "skill".
	Scheme string
	// Authority is the first skill-path segment.
	Authority string
	// Segments are the path segments after the authority, percent-decoded once.
	Segments []string
	// lastRaw is the last segment as received.
	lastRaw string
	// all is the authority followed by Segments, in one array.
	all []string
}

// invalid builds an error naming the URI (quoted, so control characters are
// never echoed raw) and the reason.
func invalid(raw, format string, args ...any) error {
	if len(raw) > 200 {
		raw = raw[:200] + "…"
	}
	return fmt.Errorf("%w %q: %s", ErrInvalid, raw, fmt.Sprintf(format, args...))
}

// HasScheme reports whether s begins with an RFC 3986 scheme followed by ":".
// Tools use it to send URIs to the resource-reading path rather than a file
// reader.
func HasScheme(s string) bool {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// Parse validates a skill resource URI: a hierarchical URI with a non-empty
// authority and at least one path segment, no userinfo, port, query or
// fragment, no empty, "." or ".." segments (also when percent-encoded), no
// backslash, control character, encoded separator or NUL, and a scheme that
// does not name a host or network location.
func Parse(raw string) (*URI, error) { return parse(raw, true) }

// Check applies the rules of [Parse] without keeping what it splits: a
// host checks every file URI of every listed skill, and needs no more
// than the verdict for most of them.
func Check(raw string) error {
	_, err := parse(raw, false)
	return err
}

// parse is Parse; the URI is only built when keep is set.
func parse(raw string, keep bool) (*URI, error) {
	if len(raw) > MaxLength {
		return nil, invalid(raw, "longer than %d bytes", MaxLength)
	}
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c <= 0x20 || c >= 0x7f {
			return nil, invalid(raw, "byte %d is a space, control or non-ASCII character; percent-encode it", i)
		}
		switch c {
		case '\\':
			return nil, invalid(raw, "contains a backslash")
		case '?', '#':
			return nil, invalid(raw, "has a query or fragment")
		}
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !HasScheme(scheme+":") {
		return nil, invalid(raw, "not of the form scheme://authority/path")
	}
	scheme = strings.ToLower(scheme)
	if foreignSchemes[scheme] {
		return nil, invalid(raw, "scheme %q names a host or network location, not a skill", scheme)
	}
	authority, path, ok := strings.Cut(rest, "/")
	if authority == "" {
		return nil, invalid(raw, "empty authority")
	}
	for i := 0; i < len(authority); i++ {
		if !isRegNameChar(authority[i]) {
			return nil, invalid(raw, "authority %q may hold letters, digits and -._~!$&'()*+,;= only (no userinfo, port or escapes)", authority)
		}
	}
	if authority == "." || authority == ".." {
		return nil, invalid(raw, "authority is a dot segment")
	}
	if !ok || path == "" {
		return nil, invalid(raw, "no path after the authority")
	}
	n := strings.Count(path, "/") + 1
	if n+1 > MaxSegments {
		return nil, invalid(raw, "more than %d segments", MaxSegments)
	}
	var u *URI
	if keep {
		// The authority first, so that ParseSkill's path shares this array.
		all := make([]string, 1, n+1)
		all[0] = authority
		u = &URI{Raw: raw, Scheme: scheme, Authority: authority, all: all}
	}
	for i := 0; ; i++ {
		s, more, _ := strings.Cut(path, "/")
		d, err := segment(s)
		if err != nil {
			return nil, invalid(raw, "segment %d: %v", i+2, err)
		}
		if keep {
			u.lastRaw = s
			u.all = append(u.all, d)
		}
		if len(s) == len(path) {
			break
		}
		path = more
	}
	if keep {
		u.Segments = u.all[1:]
	}
	return u, nil
}

// segment checks one raw path segment and returns it decoded.
func segment(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty segment (// or a trailing slash)")
	}
	escaped := false
	for i := 0; i < len(s); i++ {
		if !isPChar(s[i]) {
			return "", fmt.Errorf("character %q is not allowed in a path segment", s[i])
		}
		escaped = escaped || s[i] == '%'
	}
	if !escaped {
		// Nothing to decode, and every byte is a pchar: no control
		// character, separator or backslash can be in it.
		if s == "." || s == ".." {
			return "", errors.New("dot segment")
		}
		return s, nil
	}
	d, err := url.PathUnescape(s)
	if err != nil {
		return "", errors.New("bad percent-encoding")
	}
	switch {
	case d == "." || d == "..":
		return "", errors.New("dot segment")
	case strings.ContainsAny(d, "/\\"):
		return "", errors.New("encoded separator")
	}
	for i := 0; i < len(d); i++ {
		if d[i] < 0x20 || d[i] == 0x7f {
			return "", errors.New("encoded control character")
		}
	}
	return d, nil
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isSubDelim(c byte) bool { return strings.IndexByte("!$&'()*+,;=", c) >= 0 }

func isRegNameChar(c byte) bool { return isUnreserved(c) || isSubDelim(c) }

func isPChar(c byte) bool { return pchars[c] }

// pchars holds the bytes a path segment may contain: checked for every
// byte of every file URI of every listed skill.
var pchars = func() (t [256]bool) {
	for c := range 256 {
		b := byte(c)
		t[c] = isUnreserved(b) || isSubDelim(b) || b == ':' || b == '@' || b == '%'
	}
	return t
}()

// IsSkillFile reports whether the URI names a SKILL.md (exact, case-sensitive).
func (u *URI) IsSkillFile() bool {
	return len(u.Segments) > 0 && u.lastRaw == SkillFile
}

// Skill describes the skill a SKILL.md URI names.
type Skill struct {
	// URI is the SKILL.md URI as received.
	URI string
	// Root is the skill root: URI without "/SKILL.md".
	Root string
	// Path is the skill path, authority included, segments decoded:
	// "acme/billing/refunds".
	Path []string
	// Name is the last skill-path segment, which must equal the frontmatter name.
	Name string
}

// ParseSkill validates the URI of a SKILL.md and splits it into root, path
// and name.
func ParseSkill(raw string) (*Skill, error) {
	u, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	if !u.IsSkillFile() {
		return nil, fmt.Errorf("%w: %q does not end in /%s", ErrNotSkill, raw, SkillFile)
	}
	// parse put the authority and the segments in one array: the path is
	// all of it but SKILL.md (capped, so an append cannot reach it).
	path := u.all[: len(u.all)-1 : len(u.all)-1]
	return &Skill{
		URI:  raw,
		Root: strings.TrimSuffix(raw, "/"+SkillFile),
		Path: path,
		Name: path[len(path)-1],
	}, nil
}

// Within reports whether uri lies strictly inside the directory root on a
// segment boundary, and returns its path relative to root. Both are compared
// as raw strings: identity is never normalised.
func Within(root, uri string) (rel string, ok bool) {
	// Not HasPrefix(uri, root+"/"): that concatenation allocates, and
	// this runs for every file of every listed skill.
	if len(uri) <= len(root) || uri[len(root)] != '/' || uri[:len(root)] != root {
		return "", false
	}
	rel = uri[len(root)+1:]
	return rel, rel != ""
}

// Resolve resolves a reference found in a skill, or given by a model, against
// the skill root, as RFC 3986 section 5.2 resolves a relative path against a
// directory, and accepts the result only if it is a valid URI strictly inside
// root. "." and ".." written as such are resolved; percent-encoded
// dots, empty segments, backslashes and absolute paths are refused. A
// reference with a scheme must already lie inside root.
//
// Resolve(root, "") and Resolve(root, ".") return root itself, for directory
// listings; callers reading files reject that.
func Resolve(root, ref string) (string, error) {
	if _, err := Parse(root + "/" + SkillFile); err != nil {
		return "", fmt.Errorf("skill root %q: %w", root, err)
	}
	if HasScheme(ref) {
		if _, err := Parse(ref); err != nil {
			return "", err
		}
		if ref == root {
			return root, nil
		}
		if _, ok := Within(root, ref); !ok {
			return "", fmt.Errorf("%w: %q is not inside %s", ErrOutsideRoot, ref, root)
		}
		return ref, nil
	}
	if strings.HasPrefix(ref, "/") {
		return "", fmt.Errorf("%w: %q is an absolute path; give a path relative to the skill root", ErrOutsideRoot, ref)
	}
	if strings.ContainsAny(ref, "\\?#") {
		return "", invalid(ref, "references may not contain a backslash, query or fragment")
	}
	ref = strings.TrimSuffix(ref, "/") // a directory may be written with a trailing slash
	var out []string
	if ref != "" {
		for _, s := range strings.Split(ref, "/") {
			switch s {
			case ".":
				continue
			case "..":
				if len(out) == 0 {
					return "", fmt.Errorf("%w: %q climbs above the skill root", ErrOutsideRoot, ref)
				}
				out = out[:len(out)-1]
				continue
			}
			if _, err := segment(s); err != nil {
				return "", invalid(ref, "%v", err)
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return root, nil
	}
	res := root + "/" + strings.Join(out, "/")
	if _, err := Parse(res); err != nil {
		return "", err
	}
	return res, nil
}
