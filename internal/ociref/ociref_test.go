package ociref

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	const d = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		in   string
		want Ref
		err  string // part of the error, "" for none
	}{
		{in: "oci://ghcr.io/acme/skills:v1", want: Ref{Registry: "ghcr.io", Repository: "acme/skills", Tag: "v1"}},
		{in: "oci://ghcr.io/acme/skills", want: Ref{Registry: "ghcr.io", Repository: "acme/skills", Tag: "latest"}},
		{in: "oci://127.0.0.1:5000/skills@" + d, want: Ref{Registry: "127.0.0.1:5000", Repository: "skills", Digest: d}},
		{in: "oci://[::1]:5000/a/b-c_d.e:1.0", want: Ref{Registry: "[::1]:5000", Repository: "a/b-c_d.e", Tag: "1.0"}},
		{in: "oci://localhost:5000/skills:v1@" + d, want: Ref{Registry: "localhost:5000", Repository: "skills", Tag: "v1", Digest: d}},
		{in: "ghcr.io/acme/skills", err: "starts with oci://"},
		{in: "oci://ghcr.io", err: "no repository"},
		{in: "oci://ghcr.io/", err: "no repository"},
		{in: "oci://gh_cr.io/a", err: "registry"},
		{in: "oci://ghcr.io/Acme/skills", err: "lowercase"},
		{in: "oci://ghcr.io/acme//skills", err: "lowercase"},
		{in: "oci://ghcr.io/acme/skills:-v1", err: "tag"},
		{in: "oci://ghcr.io/acme/skills@sha256:abc", err: "digest"},
		{in: "oci://ghcr.io/acme/skills@md5:" + strings.Repeat("0", 32), err: "digest"},
		{in: "oci://ghcr.io/acme/sk ills", err: "lowercase"},
		{in: "oci://ghcr.io/" + strings.Repeat("a", MaxLength), err: "longer than"},
	} {
		got, err := Parse(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrBadRef) {
				t.Errorf("Parse(%q) = %v, want an ErrBadRef naming %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// FuzzParse: any string parses or is refused, never a panic, and what
// parses prints to a reference that parses to the same thing.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"oci://ghcr.io/acme/skills:v1", "oci://127.0.0.1:5000/x@sha256:" + strings.Repeat("a", 64), "oci://[::1]/a", "oci://a/b:c@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		r2, err := Parse(r.String())
		if err != nil {
			t.Fatalf("Parse(%q) = %+v, whose String %q does not parse: %v", s, r, r.String(), err)
		}
		if r.Digest != "" {
			r.Tag = "" // String drops a tag beside a digest
			if r2.Tag == "latest" {
				r2.Tag = ""
			}
		}
		if r != r2 {
			t.Fatalf("Parse(%q) = %+v, but its String parses to %+v", s, r, r2)
		}
	})
}
