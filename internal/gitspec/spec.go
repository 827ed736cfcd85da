// Package gitspec parses git source specs (git+URL[@REF][#SUBDIR]) without
// importing a git implementation, so that a host can tell and check a git
// source without building go-git into its importers.
package gitspec

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"unicode/utf8"
)

// SpecPrefix starts every git source: git+URL[@REF][#SUBDIR].
const SpecPrefix = "git+"

// MaxSpecLength bounds a source spec; longer ones are refused.
const MaxSpecLength = 4096

// Spec is a parsed git source, git+URL[@REF][#SUBDIR].
type Spec struct {
	// URL is the repository: https://, http://, ssh://, git:// or file://.
	// It never holds a password: tokens come from the environment or a
	// credentials file (see [Credentials]).
	URL string
	// Ref is a branch, a tag or a full commit id; "" means the remote's
	// default branch.
	Ref string
	// Subdir is the slash-separated folder holding the skills, "" for the root.
	Subdir string
}

// ErrBadSpec is wrapped by every error of [ParseSpec].
var ErrBadSpec = errors.New("bad git source")

// IsSpec reports whether s is meant as a git source (starts with "git+"),
// so that callers can tell it from a directory before parsing it.
func IsSpec(s string) bool { return strings.HasPrefix(s, SpecPrefix) }

// ParseSpec parses git+URL[@REF][#SUBDIR]. REF follows the first "@" in
// the URL's path (an "@" inside the path must be written %40); SUBDIR
// follows the first "#". Errors say what to write instead.
func ParseSpec(s string) (Spec, error) {
	bad := func(format string, args ...any) (Spec, error) {
		// What the user wrote is quoted clipped: %q of invalid UTF-8 takes
		// four bytes a byte, and the spec can be quoted twice (whole, then
		// the part at fault), so an error stays one readable line.
		for i, a := range args {
			if str, ok := a.(string); ok {
				args[i] = clip(str)
			}
		}
		return Spec{}, fmt.Errorf("%w %q: %s", ErrBadSpec, clip(redactSpec(s)), fmt.Sprintf(format, args...))
	}
	if len(s) > MaxSpecLength {
		return Spec{}, fmt.Errorf("%w: longer than %d bytes", ErrBadSpec, MaxSpecLength)
	}
	if !IsSpec(s) {
		return bad("a git source starts with %q, e.g. git+https://github.com/org/repo@main#skills", SpecPrefix)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == ' ' {
			return bad("contains a space or control character")
		}
	}
	rest := s[len(SpecPrefix):]
	var sp Spec
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, sp.Subdir = rest[:i], strings.Trim(rest[i+1:], "/")
		if sp.Subdir == "" || sp.Subdir == "." {
			sp.Subdir = ""
		} else if !fs.ValidPath(sp.Subdir) {
			return bad("folder %q after \"#\" must be a plain relative path (no \"..\", \".\" or empty segments)", sp.Subdir)
		}
	}
	scheme, after, ok := strings.Cut(rest, "://")
	if !ok {
		if strings.Contains(rest, ":") && !strings.Contains(rest, "/") || strings.Contains(rest, "@") && strings.Contains(rest, ":") {
			return bad("scp-style addresses (git@host:org/repo) are not accepted; write ssh://git@host/org/repo")
		}
		return bad("the URL needs a scheme: https://, http://, ssh://, git:// or file://")
	}
	switch scheme {
	case "https", "http", "ssh", "git", "file":
	default:
		return bad("scheme %q is not one of https, http, ssh, git, file", scheme)
	}
	// The authority ends at the first "/"; a ref starts at the first "@" after it.
	slash := strings.IndexByte(after, '/')
	if slash < 0 {
		return bad("the URL has no repository path")
	}
	if at := strings.IndexByte(after[slash:], '@'); at >= 0 {
		sp.Ref = after[slash+at+1:]
		after = after[:slash+at]
		if err := checkRef(sp.Ref); err != nil {
			return bad("ref %q after \"@\": %v", sp.Ref, err)
		}
	}
	raw := scheme + "://" + after
	u, err := url.Parse(raw)
	if err != nil {
		return bad("%v", unwrapURLError(err))
	}
	if u.RawQuery != "" || u.ForceQuery {
		return bad("a query string (\"?\") is not part of a repository URL")
	}
	if _, set := u.User.Password(); set {
		return bad("the URL holds a password; put the token in SKILLPORT_GIT_TOKEN or a credentials file instead, where ps and logs cannot show it")
	}
	switch {
	case scheme == "file":
		if u.Host != "" && u.Host != "localhost" {
			return bad("file:// URLs name a local path: file:///path/to/repo.git")
		}
		if u.User != nil {
			return bad("file:// URLs take no user")
		}
	case u.Host == "" || u.Hostname() == "":
		return bad("the URL has no host")
	}
	if strings.Trim(u.Path, "/") == "" {
		return bad("the URL has no repository path")
	}
	sp.URL = u.String()
	// Percent-encoding can triple what was written: a spec is kept only if
	// its normal form also parses, so String round-trips.
	if len(sp.String()) > MaxSpecLength {
		return bad("longer than %d bytes once percent-encoded", MaxSpecLength)
	}
	return sp, nil
}

// checkRef applies git's rules for ref names (git check-ref-format), so a
// typo fails at start-up with a reason, not as a missing ref.
func checkRef(r string) error {
	switch {
	case r == "":
		return errors.New("empty; leave out \"@\" for the default branch")
	case len(r) > 255:
		return errors.New("longer than 255 bytes")
	case strings.HasPrefix(r, "-"), strings.HasPrefix(r, "/"), strings.HasSuffix(r, "/"), strings.HasSuffix(r, "."),
		strings.HasSuffix(r, ".lock"), strings.Contains(r, ".."), strings.Contains(r, "//"), strings.Contains(r, "@{"), r == "@":
		return errors.New("not a valid git ref name")
	}
	for _, seg := range strings.Split(r, "/") {
		if strings.HasPrefix(seg, ".") {
			return errors.New("a ref segment cannot start with \".\"")
		}
	}
	for _, c := range r {
		if c < 0x20 || c == 0x7f || strings.ContainsRune(" ~^:?*[\\", c) {
			return fmt.Errorf("%q is not allowed in a ref name", c)
		}
	}
	return nil
}

// String returns the spec in source syntax, without credentials.
func (s Spec) String() string {
	out := SpecPrefix + RedactURL(s.URL)
	if s.Ref != "" {
		out += "@" + s.Ref
	}
	if s.Subdir != "" {
		out += "#" + s.Subdir
	}
	return out
}

// IsCommit reports whether Ref is a full commit id, a pin that never moves.
func (s Spec) IsCommit() bool { return isHex(s.Ref, 40) || isHex(s.Ref, 64) }

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// RedactURL drops any user information from a URL, for messages.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		if _, set := u.User.Password(); set {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	return u.String()
}

// redactSpec hides a password in a spec that failed to parse.
func redactSpec(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	_, after, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	auth := after
	if i := strings.IndexByte(auth, '/'); i >= 0 {
		auth = auth[:i]
	}
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		if c := strings.IndexByte(auth[:at], ':'); c >= 0 {
			return strings.Replace(s, auth[c+1:at], "xxxxx", 1)
		}
	}
	return s
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// clipLen bounds what an error quotes of the user's input.
const clipLen = 96

// clip shortens s to at most clipLen bytes, cut on a rune boundary, marked
// with "…" when cut.
func clip(s string) string {
	if len(s) <= clipLen {
		return s
	}
	i := clipLen
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
