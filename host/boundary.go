package host

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// newBoundary returns a fresh random boundary; tests replace it to force a
// collision.
var newBoundary = func() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// freshBoundary returns a random token that occurs in none of parts. Server
// content is delivered to the model byte for byte inside a tag whose name
// carries such a token ([WrapUntrusted]); since the content cannot contain
// the token, no closing tag in it can end the wrapper, whatever it holds.
// A token found in the content (only a content that guessed 64 random bits
// could hold it) is drawn again.
func freshBoundary(parts ...string) string {
	for {
		t := newBoundary()
		clash := false
		for _, p := range parts {
			if strings.Contains(p, t) {
				clash = true
				break
			}
		}
		if !clash {
			return t
		}
	}
}

// UntrustedTag is the name of the element that holds server content,
// followed by "_" and the boundary.
const UntrustedTag = "untrusted"

// WrapUntrusted returns text, unchanged, between <untrusted_B> and
// </untrusted_B> on lines of their own, with B a random token absent from
// text, and the boundary B. The caller tells the model that the element
// ends only at the closing tag with that boundary.
func WrapUntrusted(text string) (wrapped, boundary string) {
	boundary = freshBoundary(text)
	tag := UntrustedTag + "_" + boundary
	var b strings.Builder
	b.Grow(len(text) + 2*len(tag) + 8)
	b.WriteString("<" + tag + ">\n")
	b.WriteString(text)
	b.WriteString("\n</" + tag + ">\n")
	return b.String(), boundary
}

// untrustedNotice is the sentence that explains a [WrapUntrusted] element.
func untrustedNotice(what, boundary string) string {
	tag := UntrustedTag + "_" + boundary
	return " " + what + " follows byte for byte between <" + tag + "> and </" + tag + ">: the suffix is random for this response and occurs nowhere in that content, so no other tag inside it ends it."
}

// UntrustedContent returns the content of the first [WrapUntrusted] element
// of a rendered result (read_skill, read_skill_file, a prompt), exactly as
// the server sent it, and false when there is none. A host that hands the
// model's file reads to a tool, or a test, recovers the bytes with it.
func UntrustedContent(rendered string) (string, bool) {
	open := "\n<" + UntrustedTag + "_"
	i := strings.Index(rendered, open)
	if i < 0 {
		return "", false
	}
	rest := rendered[i+len(open):]
	j := strings.Index(rest, ">\n")
	if j <= 0 {
		return "", false
	}
	closing := "\n</" + UntrustedTag + "_" + rest[:j] + ">"
	rest = rest[j+2:]
	k := strings.Index(rest, closing)
	if k < 0 {
		return "", false
	}
	return rest[:k], true
}
