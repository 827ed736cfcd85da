package web

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestRenderMarkdown(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     []string
		mustNots []string
	}{
		{"| a | b |\n|:--|--:|\n| 1 | 2 |\n", []string{"<table>", `<th align="left">a</th>`, `<td align="right">2</td>`}, nil},
		{"```go\nx := 1\n```\n", []string{`<code class="language-go">x := 1`}, nil},
		{"<script>alert(1)</script>", nil, []string{"<script"}},
		{"[x](javascript:alert(1))", []string{"x"}, []string{"javascript:"}},
		{"<a href=\"javascript:alert(1)\" onclick=\"x()\">y</a>", nil, []string{"javascript:", "onclick"}},
		{"![i](https://evil.example/x.png)", nil, []string{"evil.example"}},
		{"![i](//evil.example/x.png)", nil, []string{"evil.example"}},
		{"![i](img/ok.png)", []string{`src="img/ok.png"`}, nil},
		{"[ok](references/A.md)", []string{`href="references/A.md"`}, nil},
		{"[ext](https://example.com)", []string{`href="https://example.com"`, `rel="nofollow noreferrer"`}, nil},
		{"```x\" onmouseover=\"alert(1)\ncode\n```", nil, []string{"onmouseover"}},
	} {
		got, _ := renderMarkdown([]byte(tc.in))
		for _, w := range tc.want {
			if !strings.Contains(string(got), w) {
				t.Errorf("%q: missing %q in %s", tc.in, w, got)
			}
		}
		for _, w := range tc.mustNots {
			if strings.Contains(strings.ToLower(string(got)), w) {
				t.Errorf("%q: contains %q: %s", tc.in, w, got)
			}
		}
	}
	big := strings.Repeat("a", MaxRenderBytes+10)
	if _, cut := renderMarkdown([]byte(big)); !cut {
		t.Error("a body beyond MaxRenderBytes was not cut")
	}
}

// FuzzRenderMarkdown: whatever the Markdown, the output has no script,
// style, frame or object element, no event handler attribute and no URL
// attribute with a scheme other than http, https or mailto.
func FuzzRenderMarkdown(f *testing.F) {
	for _, s := range []string{"# t", "<script>x</script>", "[a](javascript:x)", "<img src=x onerror=y>", "| a |\n|---|\n| b |"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, _ := renderMarkdown([]byte(in))
		z := html.NewTokenizer(strings.NewReader(string(out)))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				return
			}
			tok := z.Token()
			switch tok.Data {
			case "script", "style", "iframe", "object", "embed", "svg", "math", "form", "base", "meta", "link":
				if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
					t.Fatalf("%q rendered a <%s>: %q", in, tok.Data, out)
				}
			}
			for _, a := range tok.Attr {
				if strings.HasPrefix(strings.ToLower(a.Key), "on") || a.Key == "style" {
					t.Fatalf("%q rendered attribute %s: %q", in, a.Key, out)
				}
				if a.Key == "href" || a.Key == "src" {
					u, err := url.Parse(a.Val)
					if err == nil && u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto" {
						t.Fatalf("%q rendered %s=%q", in, a.Key, a.Val)
					}
				}
			}
		}
	})
}
