package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/url"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// MaxRenderBytes bounds the Markdown rendered into a skill page. A longer
// SKILL.md is still served byte for byte by the file view and download; its
// page says the rendering was cut.
const MaxRenderBytes = 1 << 20

// md renders CommonMark with GFM tables and strikethrough. Raw HTML inside the
// Markdown is not passed through (goldmark's default): it becomes an
// "omitted" comment, and the sanitizer removes anything else.
var md = goldmark.New(goldmark.WithExtensions(extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)), extension.Strikethrough))

// policy is the one place a skill's bytes become HTML. It keeps structure
// and text, links with http, https or mailto schemes or relative paths, and
// images only when they are relative (a remote image would tell a third
// party who reads the page). No element may carry an event handler, style or
// script, whatever the Markdown says.
var policy = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(false)
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[a-zA-Z0-9_+-]{1,32}$`)).OnElements("code")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|right|center)$`)).OnElements("th", "td")
	p.RewriteSrc(func(u *url.URL) {
		if u.IsAbs() || u.Host != "" {
			*u = url.URL{}
		}
	})
	return p
}()

// renderMarkdown turns a SKILL.md body into sanitized HTML. It never fails:
// a body goldmark cannot convert is shown as escaped text.
func renderMarkdown(body []byte) (html template.HTML, cut bool) {
	if len(body) > MaxRenderBytes {
		body, cut = body[:MaxRenderBytes], true
	}
	var buf bytes.Buffer
	if err := md.Convert(body, &buf); err != nil {
		return template.HTML(template.HTMLEscapeString(fmt.Sprintf("cannot render: %v", err))), cut
	}
	return template.HTML(policy.SanitizeBytes(buf.Bytes())), cut
}
