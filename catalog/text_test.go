package catalog

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/skillport/skillport/internal/skilltest"
)

// isText is what textValidator must conclude of content: valid UTF-8
// without NUL bytes.
func isText(p []byte) bool { return utf8.Valid(p) && bytes.IndexByte(p, 0) < 0 }

// validateChunked feeds p to a textValidator in writes of at most chunk bytes.
func validateChunked(p []byte, chunk int) bool {
	var tv textValidator
	for len(p) > 0 {
		k := min(chunk, len(p))
		tv.Write(p[:k])
		p = p[k:]
	}
	return tv.valid()
}

func TestTextValidator(t *testing.T) {
	ascii := bytes.Repeat([]byte("plain text, 32 bytes of ascii.\n"), 8)
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"ascii", ascii},
		{"mixed", []byte("naïve café 東京 データ über 🔷 déjà-vu, then ascii for a while to fill words")},
		{"nul", append(append([]byte{}, ascii...), 0)},
		{"nul early", []byte("a\x00" + string(ascii))},
		{"lone continuation", append(append([]byte{}, ascii...), 0x80, 'a')},
		{"truncated at end", append(append([]byte{}, ascii...), 0xE6, 0x9D)},
		{"truncated in word", append([]byte("abc\xE6\x9Ddefghijk"), ascii...)},
		{"overlong", append([]byte("abcdefgh\xC0\xAFijklmnop"), ascii...)},
		{"surrogate", append([]byte("abcdefgh\xED\xA0\x80ijklmnop"), ascii...)},
		{"above U+10FFFF", append([]byte("abcdefgh\xF4\x90\x80\x80ijklmnop"), ascii...)},
		{"U+FFFD itself", append([]byte("abcdefgh\xEF\xBF\xBDijklmnop"), ascii...)},
		{"4-byte at word end", append([]byte("abcd\xF0\x9F\x94\xB7"), ascii...)},
		{"invalid after 32-byte run", append(append([]byte{}, ascii[:64]...), 0xFF)},
		{"binary", []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}},
	}
	for _, tt := range tests {
		want := isText(tt.data)
		if got := validUTF8(tt.data) && bytes.IndexByte(tt.data, 0) < 0; got != want {
			t.Errorf("%s: validUTF8 says %v, want %v", tt.name, got, want)
		}
		for _, chunk := range []int{1, 2, 3, 5, 8, 13, 64 << 10} {
			if got := validateChunked(tt.data, chunk); got != want {
				t.Errorf("%s in writes of %d bytes: text=%v, want %v", tt.name, chunk, got, want)
			}
		}
	}
}

// FuzzTextValidator checks the streaming text check against utf8.Valid and
// a NUL search over the whole content, however the content is split.
func FuzzTextValidator(f *testing.F) {
	f.Add([]byte("naïve café 東京 データ über 🔷 déjà-vu"), uint8(3))
	f.Add([]byte("abcdefgh\xED\xA0\x80ijklmnop"), uint8(8))
	f.Add([]byte("abc\xE6\x9D"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		want := isText(data)
		if got := utf8.Valid(data) == validUTF8(data); !got {
			t.Fatalf("validUTF8(%q) = %v, utf8.Valid says %v", data, validUTF8(data), utf8.Valid(data))
		}
		if got := validateChunked(data, int(chunk)+1); got != want {
			t.Fatalf("%q in writes of %d bytes: text=%v, want %v", data, int(chunk)+1, got, want)
		}
	})
}

// TestSkillMDText checks the text flag of SKILL.md files, which comes from
// skill.Parse's encoding check rather than the read: an outer skill
// publishes a nested SKILL.md that is not text (and so not a skill) as a
// binary file, on both walks.
func TestSkillMDText(t *testing.T) {
	files := map[string]string{
		"outer/SKILL.md":          md("outer", "Outer skill."),
		"outer/bad-utf8/SKILL.md": md("bad-utf8", "Café in Latin-1: caf\xe9."),
		"outer/nul/SKILL.md":      md("nul", "A NUL\x00 byte."),
		"outer/plain/SKILL.md":    md("plain", "Naïve but valid."),
		"outer/nofm/SKILL.md":     "no frontmatter, but text: 東京\n",
	}
	want := map[string]bool{
		"skill://outer/SKILL.md":          true,
		"skill://outer/bad-utf8/SKILL.md": false,
		"skill://outer/nul/SKILL.md":      false,
		"skill://outer/plain/SKILL.md":    true,
		"skill://outer/nofm/SKILL.md":     true,
	}
	dir := skilltest.WriteTree(t, files)
	for _, fd := range []bool{true, false} {
		useFDWalk = fd && fdWalkSupported
		c, err := OpenDir(dir, &Options{Logger: quiet})
		useFDWalk = fdWalkSupported
		if err != nil {
			t.Fatal(err)
		}
		for uri, text := range want {
			f := c.File(uri)
			if f == nil {
				t.Errorf("fd=%v: %s not published", fd, uri)
				continue
			}
			if f.Text != text {
				t.Errorf("fd=%v: %s: Text=%v, want %v", fd, uri, f.Text, text)
			}
		}
	}
}
