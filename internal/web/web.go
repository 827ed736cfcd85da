// Package web serves a catalog people can browse: a page listing the skills
// of a [published.Source], a page per skill with its SKILL.md rendered as
// sanitized HTML, its frontmatter and its files, each file viewable as text
// or downloadable byte for byte, and the Agent Skills discovery document at
// /.well-known/agent-skills/index.json.
//
// Skill content is hostile input. Markdown passes through one sanitizer;
// every other byte of a skill (names, frontmatter, file names, file text)
// reaches a page only through html/template's escaping; downloads are
// served as application/octet-stream attachments that a browser never
// renders. Every page carries a Content-Security-Policy that allows no
// inline script, no inline style and nothing from another origin.
//
// Each request reads the Source's current snapshot, so a live reload shows
// on the next page load. Mount the handler with endpoint.Endpoint.Handle so
// that it gets the same limits, Origin check, metrics and access log as the
// MCP endpoint.
package web

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
	"github.com/skillport/skillport/wire"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// DefaultPageSize is how many skills the catalog page lists at once: a
// catalog of any size answers with one page of bounded size.
const DefaultPageSize = 50

// MaxPageSize bounds Options.PageSize.
const MaxPageSize = 500

// MaxQueryBytes bounds a search query; a longer one is refused with 400.
const MaxQueryBytes = 256

// CSP is the Content-Security-Policy of every page: scripts, styles and
// connections from this origin only (the search script is a file under
// /assets/), images from this origin or data: URLs, no frames, no plugins,
// forms posting only here.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// Visibility decides whether the caller of r may see sk. Every listing,
// page, file and discovery entry goes through it, so that an authorization
// layer plugs in at one place.
type Visibility func(r *http.Request, sk *catalog.Skill) bool

// Options configure a [Handler]. The zero value is usable.
type Options struct {
	// Visible decides which skills the caller may see; nil means all.
	Visible Visibility
	// PageSize is how many skills the catalog page lists (default
	// DefaultPageSize, at most MaxPageSize).
	PageSize int
	// MCPPath is where the MCP endpoint is mounted, for the snippets and
	// the discovery document (default "/mcp").
	MCPPath string
	// NoMCP leaves the MCP endpoint out of the discovery document, for a
	// site that publishes its skills over plain HTTP only: hosts then
	// download each SKILL.md from its url.
	NoMCP bool
	// Scheme is the URI scheme of the catalog's skills (default "skill").
	Scheme string
	// Logger receives errors reading files; nil means slog.Default().
	Logger *slog.Logger
	// Registry, when the catalog is a registry's, adds each skill's
	// versions, their review state (docs/registry-governance.md), scan
	// findings and recent loads to its pages, from one SkillInfo a page.
	Registry Registry
}

// Handler serves the web catalog. Create it with [New].
type Handler struct {
	src  published.Source
	opts Options
	tmpl *template.Template
	mux  *http.ServeMux
	log  *slog.Logger
	idx  searchCache
	wk   wellKnownCache
}

// New returns the web catalog of src.
func New(src published.Source, opts *Options) (*Handler, error) {
	if src == nil {
		return nil, errors.New("web: nil source")
	}
	h := &Handler{src: src}
	if opts != nil {
		h.opts = *opts
	}
	o := &h.opts
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.PageSize < 0 || o.PageSize > MaxPageSize {
		return nil, errors.New("web: PageSize must be between 1 and 500")
	}
	if o.MCPPath == "" {
		o.MCPPath = "/mcp"
	}
	if o.Scheme == "" {
		o.Scheme = "skill"
	}
	if o.Visible == nil {
		o.Visible = func(*http.Request, *catalog.Skill) bool { return true }
	}
	h.log = o.Logger
	if h.log == nil {
		h.log = slog.Default()
	}
	t, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	h.tmpl = t
	assets, _ := fs.Sub(assetFS, "assets")
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /{$}", h.serveCatalog)
	h.mux.HandleFunc("GET /search.json", h.serveSearch)
	h.mux.HandleFunc("GET /s/{rest...}", h.serveSkillOrFile)
	h.mux.HandleFunc("GET /raw/{rest...}", h.serveRaw)
	h.mux.HandleFunc("GET /archive/{rest...}", h.serveArchive)
	h.mux.HandleFunc("GET "+WellKnownPath, h.serveWellKnown)
	h.mux.Handle("GET /assets/", http.StripPrefix("/assets/", assetHandler(assets)))
	// Browsers ask for /favicon.ico on their own; the pages name none.
	h.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return h, nil
}

// WellKnownPath is where the Agent Skills discovery document is served.
const WellKnownPath = wire.WellKnownPath

// Routes returns the patterns to mount the handler at with
// endpoint.Endpoint.Handle.
func (h *Handler) Routes() []string {
	return []string{"GET /{$}", "GET /search.json", "GET /s/", "GET /raw/", "GET /archive/", "GET " + WellKnownPath, "GET /assets/", "GET /favicon.ico"}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	h.mux.ServeHTTP(w, r)
}

func assetHandler(assets fs.FS) http.Handler {
	fsrv := http.FileServerFS(assets)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") || r.URL.Path == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		fsrv.ServeHTTP(w, r)
	})
}

// snapshot is what the caller of r may see. When the source hands out one
// view per caller ([published.ViewSource], as access.Filter does), every page,
// download, archive, search and discovery entry answers from that view,
// the one MCP answers from too, so a skill hidden from the caller is absent
// here with every byte of it, also when its folder sits inside a skill the
// caller sees. Options.Visible is then asked on top of it.
func (h *Handler) snapshot(r *http.Request) published.Snapshot {
	snap := h.src.Snapshot()
	if vs, ok := h.src.(published.ViewSource); ok && snap != nil {
		v, err := vs.View(r.Context(), snap, skillserver.CallerFromContext(r.Context()))
		if err != nil || v == nil {
			return published.NewSnapshot(nil, nil, nil) // nothing rather than more than the caller may see
		}
		return v
	}
	return snap
}

// visibleSkill returns the skill of snap whose root path is p, if the caller
// may see it.
func (h *Handler) visibleSkill(r *http.Request, snap published.Snapshot, p string) *catalog.Skill {
	// The route's path is unescaped; catalog URIs escape each segment.
	sk := snap.Skill(h.opts.Scheme + "://" + escapePath(p) + "/SKILL.md")
	if sk == nil || !h.opts.Visible(r, sk) {
		return nil
	}
	return sk
}

// visibleFile returns the file of snap at path p (skill path, "/", path in
// the skill) and its skill, if the caller may see that skill.
func (h *Handler) visibleFile(r *http.Request, snap published.Snapshot, p string) (*catalog.File, *catalog.Skill) {
	p = escapePath(p) // catalog URIs escape each segment
	uri := h.opts.Scheme + "://" + p
	f := snap.File(uri)
	if f == nil {
		return nil, nil
	}
	// The innermost skill whose root is a prefix of the file: walk up.
	for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
		if sk := snap.Skill(h.opts.Scheme + "://" + p[:i] + "/SKILL.md"); sk != nil {
			if !h.opts.Visible(r, sk) {
				return nil, nil
			}
			return f, sk
		}
	}
	return nil, nil
}

// escapePath escapes each segment of a slash-separated path as catalog URIs
// and this package's links do.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// relPath is f's path inside sk, unescaped, for display.
func relPath(sk *catalog.Skill, f *catalog.File) string {
	if sk.Dir == "." || sk.Dir == "" {
		return f.Path
	}
	return strings.TrimPrefix(f.Path, sk.Dir+"/")
}
