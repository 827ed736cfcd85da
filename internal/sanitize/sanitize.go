// Package sanitize makes server-authored text safe to show to a user or a
// model: it strips control characters that could rewrite a terminal or break
// out of a prompt structure, and flags characters that hide text (bidi
// overrides, Unicode tag characters, zero-width characters).
package sanitize

import (
	"strings"
	"unicode/utf8"
)

// Flags say which kinds of hidden or unsafe characters a string contained.
type Flags uint8

// Flag values.
const (
	Control   Flags = 1 << iota // C0 or C1 control characters (other than tab, newline, CR)
	Bidi                        // bidirectional overrides and isolates (U+202A–202E, U+2066–2069, U+200E/F, U+061C)
	Tag                         // Unicode tag characters (U+E0000–E007F), invisible to people
	ZeroWidth                   // zero-width characters (U+200B–200D, U+2060, U+FEFF, U+180E)
	Invalid                     // invalid UTF-8
)

// String lists the flags for a warning.
func (f Flags) String() string {
	var parts []string
	for _, x := range []struct {
		f Flags
		s string
	}{{Control, "control characters"}, {Bidi, "bidirectional overrides"}, {Tag, "invisible tag characters"}, {ZeroWidth, "zero-width characters"}, {Invalid, "invalid UTF-8"}} {
		if f&x.f != 0 {
			parts = append(parts, x.s)
		}
	}
	return strings.Join(parts, ", ")
}

// Classify reports the flag a rune falls under, or 0.
func classify(r rune) Flags {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return 0
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return Control
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return Bidi
	case r >= 0xe0000 && r <= 0xe007f:
		return Tag
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff, r == 0x180e:
		return ZeroWidth
	}
	return 0
}

// Line cleans s for a one-line display (a catalog entry, a table cell, an
// approval prompt): every flagged character is removed and runs of
// whitespace, newlines included, become one space.
func Line(s string) (string, Flags) {
	out, f := Text(s)
	return strings.Join(strings.Fields(out), " "), f
}

// Text removes flagged characters from s, keeping tabs and newlines, and
// replaces invalid UTF-8 with U+FFFD. It returns the flags found.
func Text(s string) (string, Flags) {
	var flags Flags
	clean := true
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				flags |= Invalid
				clean = false
				continue
			}
		}
		if f := classify(r); f != 0 {
			flags |= f
			clean = false
		}
	}
	if clean {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				b.WriteRune(utf8.RuneError)
				continue
			}
		}
		if classify(r) == 0 {
			b.WriteRune(r)
		}
	}
	return b.String(), flags
}

// Flag reports the flags of s without changing it.
func Flag(s string) Flags {
	_, f := Text(s)
	return f
}

// XML escapes s for use as XML character data or an attribute value:
// & < > " ' are replaced by entities. Flagged characters must be removed
// first, with [Text] or [Line].
func XML(s string) string {
	if !strings.ContainsAny(s, `&<>"'`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Truncate shortens s to at most n runes, ending with "…" when cut.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
