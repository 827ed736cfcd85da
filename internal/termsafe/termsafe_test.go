package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"pdf-processing", "pdf-processing"},
		{"ünïcode 名前.md", "ünïcode 名前.md"},
		{"ctl\x1b]0;PWNED\a\x1b[2J.md", `ctl\x1b]0;PWNED\x07\x1b[2J.md`},
		{"two\nlines\r\tx", `two\nlines\r\tx`},
		{"del\x7f", `del\x7f`},
		{"c1\u009bcsi", `c1\x9bcsi`},
		{"evil\u202egpj.exe", `evil\u202egpj.exe`},
		{"iso\u2066x\u2069", `iso\u2066x\u2069`},
		{"zw\u200bj", `zw\u200bj`},
		{"tag\U000E0041", `tag\U000e0041`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"", ""},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLines(t *testing.T) {
	got := Lines("fatal: missing key\x1b[2J\r\nsecond\n")
	if len(got) != 2 || got[0] != `fatal: missing key\x1b[2J` || got[1] != "second" {
		t.Fatalf("Lines = %q", got)
	}
}

// FuzzEscape checks that no output of Escape can reach a terminal as a
// control: every result is valid UTF-8 with no character Escape escapes.
func FuzzEscape(f *testing.F) {
	f.Add("ctl\x1b]0;PWNED\a\x1b[2J.md")
	f.Add("a\u202eb\xff")
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) || firstUnsafe(out) >= 0 {
			t.Fatalf("Escape(%q) = %q still holds an unsafe character", s, out)
		}
		if firstUnsafe(s) < 0 && out != s {
			t.Fatalf("Escape changed a safe string %q to %q", s, out)
		}
		if strings.Contains(out, "\n") {
			t.Fatal("newline survived")
		}
	})
}
