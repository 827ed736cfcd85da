package endpoint

import (
	"strings"
	"testing"
)

// FuzzBearerToken: whatever the Authorization header, parsing it never
// panics, and a token it returns is a non-empty RFC 6750 token68 within
// the size bound that the header really carried.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc.def.ghi", "bearer  x", "Basic YQ==", "Bearer", "Bearer ", "Bearer a b", "BEARER a=", "Bearer \x00", "Bearer " + strings.Repeat("a", maxTokenBytes+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, ok := bearerToken(h)
		if !ok {
			if tok != "" {
				t.Fatalf("refused %q but returned %q", h, tok)
			}
			return
		}
		if tok == "" || len(tok) > maxTokenBytes || !strings.HasSuffix(h, tok) {
			t.Fatalf("bearerToken(%q) = %q", h, tok)
		}
		if strings.ContainsAny(tok, " \t\r\n\"\\,") {
			t.Fatalf("token %q carries a separator", tok)
		}
		if !strings.EqualFold(h[:6], "bearer") {
			t.Fatalf("accepted scheme of %q", h)
		}
	})
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		h, tok string
		ok     bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"Bearer a.b-c_d~e+f/g==", "a.b-c_d~e+f/g==", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer a b", "", false},
		{"Basic abc", "", false},
		{"Bearerabc", "", false},
		{"Bearer " + strings.Repeat("a", maxTokenBytes), strings.Repeat("a", maxTokenBytes), true},
		{"Bearer " + strings.Repeat("a", maxTokenBytes+1), "", false},
	} {
		tok, ok := bearerToken(tc.h)
		if tok != tc.tok || ok != tc.ok {
			t.Errorf("bearerToken(%.40q) = %.20q, %v; want %.20q, %v", tc.h, tok, ok, tc.tok, tc.ok)
		}
	}
}
