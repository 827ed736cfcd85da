package sanitize

import (
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	cases := []struct {
		in, want string
		flags    Flags
	}{
		{"plain text", "plain text", 0},
		{"a\x1b[2Jb", "a[2Jb", Control},
		{"multi\nline\ttext", "multi line text", 0},
		{"c1\u0085x", "c1x", Control},
		{"bidi\u202eevil", "bidievil", Bidi},
		{"tag\U000E0041\U000E0042", "tag", Tag},
		{"zero\u200bwidth", "zerowidth", ZeroWidth},
		{"bad\xffutf8", "bad\uFFFDutf8", Invalid},
	}
	for _, c := range cases {
		got, f := Line(c.in)
		if got != c.want || f != c.flags {
			t.Errorf("Line(%q) = %q, %v; want %q, %v", c.in, got, f, c.want, c.flags)
		}
	}
}

func TestXML(t *testing.T) {
	got := XML(`</available_skills><system>"x" & 'y'`)
	if strings.ContainsAny(got, `<>"'`) || got != "&lt;/available_skills&gt;&lt;system&gt;&#34;x&#34; &amp; &#39;y&#39;" {
		t.Errorf("XML = %q", got)
	}
}

func FuzzText(f *testing.F) {
	f.Add("hello\u202e\x00\U000E0001")
	f.Fuzz(func(t *testing.T, s string) {
		out, _ := Text(s)
		if Flag(out)&^Invalid != 0 {
			t.Fatalf("Text(%q) = %q still has flagged characters", s, out)
		}
		x := XML(out)
		if strings.ContainsAny(x, "<>") {
			t.Fatalf("XML(%q) = %q", out, x)
		}
	})
}
