package web

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/signature"
	"github.com/skillport/skillport/skill"
)

var funcs = map[string]any{
	"size": humanSize,
}

func humanSize(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

// row is one skill of the catalog page.
type row struct {
	Name, Path, Description, Prefix string
	Files                           int
	Size                            int64
	Loads                           int64 // recent loads; -1 when not known
}

func rowOf(sk *catalog.Skill) row {
	prefix := ""
	if i := strings.LastIndexByte(sk.Path, '/'); i >= 0 {
		prefix = sk.Path[:i]
	}
	return row{Name: sk.Name, Path: sk.Path, Description: sk.Frontmatter.Description(), Prefix: prefix,
		Files: len(sk.Files), Size: sk.Size, Loads: -1}
}

type catalogPage struct {
	Query      string
	Rows       []row
	Total      int
	Page       int
	Pages      int
	Prev, Next string
	First      int
}

func (h *Handler) serveCatalog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	if len(q) > MaxQueryBytes {
		http.Error(w, fmt.Sprintf("search query too long: %d bytes, at most %d", len(q), MaxQueryBytes), http.StatusBadRequest)
		return
	}
	page := 1
	if s := r.URL.Query().Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			http.Error(w, fmt.Sprintf("page %q: want a positive number", s), http.StatusBadRequest)
			return
		}
		page = n
	}
	snap := h.snapshot(r)
	skills := h.search(r, snap, q, -1)
	ps := h.opts.PageSize
	pages := max(1, (len(skills)+ps-1)/ps)
	page = min(page, pages)
	lo, hi := (page-1)*ps, min(page*ps, len(skills))
	p := catalogPage{Query: q, Total: len(skills), Page: page, Pages: pages, First: lo + 1}
	for _, sk := range skills[lo:hi] {
		p.Rows = append(p.Rows, rowOf(sk))
	}
	h.addLoads(r, p.Rows)
	link := func(n int) string {
		v := url.Values{}
		if q != "" {
			v.Set("q", q)
		}
		v.Set("page", strconv.Itoa(n))
		return "/?" + v.Encode()
	}
	if page > 1 {
		p.Prev = link(page - 1)
	}
	if page < pages {
		p.Next = link(page + 1)
	}
	h.render(w, "catalog.html", p)
}

type fmRow struct{ Key, Value string }

type fileRow struct {
	Rel, View, Raw, Digest string
	Size                   int64
	Depth                  int
}

type snippet struct{ Title, Where, Text string }

type skillPage struct {
	Skill       row
	URI         string
	Frontmatter []fmRow
	Body        any
	Cut         bool
	Error       string
	Files       []fileRow
	Snippets    []snippet
	// Signed says who the skill's signature bundle names (docs/signing.md);
	// the page does not verify it, hosts do, against their trust policy.
	Signed      string
	Registry    *SkillInfo
	RegistryErr string
	// Versions lists the skill's versions and their review state, from
	// the registry's SkillInfo (nil otherwise).
	Versions *versionsSection
}

func (h *Handler) serveSkillOrFile(w http.ResponseWriter, r *http.Request) {
	rest := r.PathValue("rest")
	snap := h.snapshot(r)
	if p, ok := strings.CutSuffix(rest, "/"); ok {
		if sk := h.visibleSkill(r, snap, p); sk != nil {
			h.serveSkill(w, r, snap, sk)
			return
		}
	} else if h.visibleSkill(r, snap, rest) != nil {
		// rest is unescaped; the Location must be a URI again.
		http.Redirect(w, r, "/s/"+escapePath(rest)+"/", http.StatusMovedPermanently)
		return
	}
	f, sk := h.visibleFile(r, snap, rest)
	if f == nil {
		h.notFound(w, "no skill or file at /s/"+rest)
		return
	}
	h.serveFileView(w, r, snap, sk, f)
}

func (h *Handler) serveSkill(w http.ResponseWriter, r *http.Request, snap published.Snapshot, sk *catalog.Skill) {
	p := skillPage{Skill: rowOf(sk), URI: sk.URI, Signed: signedBy(sk)}
	fm := sk.Frontmatter
	for _, k := range fm.Keys() {
		v, _ := fm.Get(k)
		s, ok := v.(string)
		if !ok {
			s = jsonValue(v)
		}
		p.Frontmatter = append(p.Frontmatter, fmRow{k, s})
	}
	if len(sk.Files) > 0 {
		data, err := snap.ReadFile(r.Context(), sk.Files[0])
		if err != nil {
			h.log.Warn("web: reading SKILL.md", "uri", sk.URI, "err", err)
			p.Error = "SKILL.md could not be read; reload the page."
		} else if doc, err := skill.Parse(data); err != nil {
			p.Error = err.Error()
		} else {
			p.Body, p.Cut = renderMarkdown(doc.Body)
		}
	}
	for _, f := range sk.Files {
		rel := relPath(sk, f)
		p.Files = append(p.Files, fileRow{Rel: rel, View: "/s/" + sk.Path + "/" + escapePath(rel), Raw: "/raw/" + sk.Path + "/" + escapePath(rel),
			Digest: f.Digest, Size: f.Size, Depth: strings.Count(rel, "/")})
	}
	p.Snippets = h.snippets(r, sk)
	if h.opts.Registry != nil {
		info, err := h.opts.Registry.SkillInfo(r.Context(), sk.Path)
		if err != nil {
			h.log.Warn("web: reading the registry", "skill", sk.Path, "err", err)
			p.RegistryErr = "The registry could not be read; versions and findings are not shown. Reload the page."
		}
		p.Registry, p.Versions = info, versionsOf(info)
	}
	h.render(w, "skill.html", p)
}

type filePage struct {
	Skill  row
	Rel    string
	File   *catalog.File
	Raw    string
	Text   string
	Binary bool
	Cut    bool
}

// MaxViewBytes bounds the text shown on a file page; the download is whole.
const MaxViewBytes = 2 << 20

func (h *Handler) serveFileView(w http.ResponseWriter, r *http.Request, snap published.Snapshot, sk *catalog.Skill, f *catalog.File) {
	rel := relPath(sk, f)
	p := filePage{Skill: rowOf(sk), Rel: rel, File: f, Raw: "/raw/" + sk.Path + "/" + escapePath(rel)}
	if !f.Text {
		p.Binary = true
	} else {
		// The file read, and the page rendering its first MaxViewBytes.
		release, ok := charge(w, r, f.Size+3*min(f.Size, MaxViewBytes))
		if !ok {
			return
		}
		defer release()
		data, err := snap.ReadFile(r.Context(), f)
		if err != nil {
			h.log.Warn("web: reading file", "uri", f.URI, "err", err)
			http.Error(w, "cannot read "+f.URI+" now; reload the page", http.StatusServiceUnavailable)
			return
		}
		if len(data) > MaxViewBytes {
			data, p.Cut = data[:MaxViewBytes], true
			// Cut at a rune boundary so the page stays valid UTF-8.
			for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
				if utf8.RuneStart(data[i]) {
					if !utf8.FullRune(data[i:]) {
						data = data[:i]
					}
					break
				}
			}
		}
		p.Text = string(data)
	}
	h.render(w, "file.html", p)
}

// serveRaw answers a download: the file's bytes exactly, as an attachment
// that no browser renders, with the digest in Repr-Digest (RFC 9530) and
// the ETag.
func (h *Handler) serveRaw(w http.ResponseWriter, r *http.Request) {
	snap := h.snapshot(r)
	f, _ := h.visibleFile(r, snap, r.PathValue("rest"))
	if f == nil {
		h.notFound(w, "no file at /raw/"+r.PathValue("rest"))
		return
	}
	release, ok := charge(w, r, f.Size)
	if !ok {
		return
	}
	defer release()
	data, err := snap.ReadFile(r.Context(), f)
	if err != nil {
		h.log.Warn("web: reading file", "uri", f.URI, "err", err)
		http.Error(w, "cannot read "+f.URI+" now; retry", http.StatusServiceUnavailable)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(f.Name))
	hd.Set("Repr-Digest", reprDigest(f.Digest))
	hd.Set("ETag", `"`+f.Digest+`"`)
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
}

// reprDigest turns "sha256:<hex>" into an RFC 9530 field value.
func reprDigest(d string) string {
	raw, err := hex.DecodeString(strings.TrimPrefix(d, "sha256:"))
	if err != nil {
		return ""
	}
	return "sha-256=:" + base64.StdEncoding.EncodeToString(raw) + ":"
}

func (h *Handler) notFound(w http.ResponseWriter, msg string) {
	w.WriteHeader(http.StatusNotFound)
	h.renderStatus(w, "notfound.html", msg)
}

func (h *Handler) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	h.renderStatus(w, name, data)
}

func (h *Handler) renderStatus(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var buf bytes.Buffer
	if err := h.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		h.log.Error("web: rendering", "page", name, "err", err)
		http.Error(w, "cannot render this page", http.StatusInternalServerError)
		return
	}
	w.Write(buf.Bytes())
}

// signedBy names the signer a skill's bundle states, "" when unsigned.
// Its binding to the skill is checked; its cryptography is the host's job
// (a key-based bundle carries only the key's hint).
func signedBy(sk *catalog.Skill) string {
	if len(sk.Signature) == 0 {
		return ""
	}
	set := &signature.Set{URI: sk.URI, Frontmatter: sk.Frontmatter.JSON()}
	for _, f := range sk.Files {
		set.Resources = append(set.Resources, signature.Resource{URI: f.URI, Digest: f.Digest, Size: f.Size})
	}
	id, err := signature.Inspect(set, sk.Signature)
	if err != nil {
		return "a signature that does not match this skill"
	}
	return id.String()
}
