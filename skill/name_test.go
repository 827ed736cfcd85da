package skill

import (
	"regexp"
	"testing"
)

// nameRE is the pattern nameFormat checks without a regular expression.
var nameRE = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

func TestNameFormat(t *testing.T) {
	for _, name := range []string{
		"", "a", "pdf", "pdf-tools", "a1-b2-c3", "0", "-", "-a", "a-", "a--b", "A", "pdf_tools", "pdf tools",
		"naïve", "a-b-", "--", "a-b--c", "x-\u00e9",
	} {
		if got, want := nameFormat(name), nameRE.MatchString(name); got != want {
			t.Errorf("nameFormat(%q) = %v, the pattern says %v", name, got, want)
		}
	}
}

func FuzzNameFormat(f *testing.F) {
	f.Add("pdf-tools")
	f.Add("a--b")
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := nameFormat(name), nameRE.MatchString(name); got != want {
			t.Fatalf("nameFormat(%q) = %v, the pattern says %v", name, got, want)
		}
	})
}
