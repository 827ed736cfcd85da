// Package termsafe makes text from disk or from a server safe to print on a
// terminal.
//
// A file name, a skill name or an error message can carry escape sequences
// that retitle the terminal, clear the screen or move the cursor, newlines
// that forge extra output lines, and bidirectional overrides that make text
// read differently from what it is. Every name the CLI prints goes through
// [Escape], so that what a user sees is exactly what is there, visibly.
package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character that could control a terminal or
// hide text written as a visible escape: C0 controls (tab and newlines
// included), DEL, C1 controls, bidirectional overrides and isolates,
// zero-width and Unicode tag characters, and bytes that are not UTF-8.
// Newlines become \n, carriage returns \r, tabs \t, other bytes below 0x100
// \xHH and other characters \uHHHH or \UHHHHHHHH. Everything else is kept,
// so ordinary names print unchanged and without allocation.
func Escape(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unsafeRune(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Lines escapes each line of a multi-line message (a server's stderr, an
// error with a cause on its own line) and returns them, so that newlines a
// caller means to print stay newlines and every other character is escaped.
func Lines(s string) []string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, p := range parts {
		parts[i] = Escape(strings.TrimSuffix(p, "\r"))
	}
	return parts
}

// firstUnsafe is the byte index of the first character Escape rewrites, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafeRune(r) {
			return i
		}
		i += n
	}
	return -1
}

// unsafeRune reports the characters that control a terminal or hide text.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true // bidirectional overrides, isolates and marks
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff, r == 0x180e, r == 0x2028, r == 0x2029:
		return true // zero-width characters and Unicode line/paragraph separators
	case r >= 0xe0000 && r <= 0xe007f:
		return true // tag characters
	}
	return false
}
