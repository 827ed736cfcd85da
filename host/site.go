package host

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing/fstest"

	"github.com/skillport/skillport/internal/sigfile"
	"github.com/skillport/skillport/skill"
	"github.com/skillport/skillport/wire"
)

// Bounds of a site read over plain HTTPS: the same as for a skill read
// over MCP, so that a web server without an MCP endpoint costs a host no
// more than one with.
const (
	// MaxSiteSkillBytes bounds one skill: the bytes downloaded for its
	// entry, and for an archive also the bytes it unpacks to.
	MaxSiteSkillBytes = 16 << 20
	// MaxSiteSkillFiles bounds the files of one archive entry.
	MaxSiteSkillFiles = 512
	// MaxSiteBytes bounds what one site's skills add up to.
	MaxSiteBytes = 256 << 20
)

// ErrSiteSkill is wrapped by every error of a skill [FetchSite] refused.
var ErrSiteSkill = errors.New("agent skills discovery: skill refused")

// Site is a discovery document a host has read, with the URL it was read
// from (entry and mcp URLs are relative to it).
type Site struct {
	URL *url.URL
	Doc wire.Discovery
	// Digest is "sha256:" and the hex SHA-256 of the document's bytes as
	// read, so that a record of the site (an install lock) can tell when
	// the document changed.
	Digest string
}

// SiteOptions bounds [FetchSite]; a zero field means its default.
type SiteOptions struct {
	MaxSkillBytes int64 // default MaxSiteSkillBytes
	MaxFiles      int   // default MaxSiteSkillFiles
	MaxTotalBytes int64 // default MaxSiteBytes
	// SkillDir, when set, is asked the folder a signed entry's skill is
	// laid out at, given the entry's name and its signature bundle: the
	// skill path the publisher signed (a signature binds the skill's
	// path, and a publisher's may be nested, acme/pdf, where a document
	// names the skill only). "" keeps the name. A folder that is not a
	// relative path ending in the name, or that overlaps another skill's,
	// is not used. The bundle is not verified yet: a wrong folder makes
	// the signature's check fail, as a wrong path would over MCP.
	SkillDir func(name string, bundle []byte) string
}

// SiteSkillError says why one entry of a discovery document was not used;
// the other entries are still read.
type SiteSkillError struct {
	Name string // the entry's name
	URL  string // the artifact's URL, when known
	Err  error
}

func (e *SiteSkillError) Error() string {
	if e.URL == "" {
		return fmt.Sprintf("skill %q: %v", e.Name, e.Err)
	}
	return fmt.Sprintf("skill %q (%s): %v", e.Name, e.URL, e.Err)
}

func (e *SiteSkillError) Unwrap() []error { return []error{e.Err, ErrSiteSkill} }

// FetchSite reads the skills of a discovery document over plain HTTP(S),
// for sites that name no MCP endpoint: each entry's artifact is
// downloaded from its url (resolved against the document; headers are
// sent only to the document's own origin), checked against the entry's
// digest, and laid out as NAME/SKILL.md (type skill-md) or NAME/… (type
// archive, a .tar.gz or .zip of the skill folder). The result is a tree
// for a catalog; the skill's own validation (name, frontmatter) is the
// catalog's. An entry that cannot be used (bad name, download failure,
// digest mismatch, unsafe or oversized archive, unknown type) is left out
// and reported as a [*SiteSkillError]; no unverified byte is kept.
//
// An entry's signature bundle (its _meta, as a skills/list entry carries
// it) is laid out as the catalog reads a source's bundles, at
// sigfile.Path of the skill's folder, for the host's trust policy to
// verify as it verifies an MCP server's; a bundle over sigfile.MaxBytes,
// or that is not a JSON object, gets its entry refused.
func FetchSite(ctx context.Context, client *http.Client, site *Site, headers map[string]string, opts *SiteOptions) (fs.FS, []error) {
	var o SiteOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxSkillBytes <= 0 {
		o.MaxSkillBytes = MaxSiteSkillBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = MaxSiteSkillFiles
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = MaxSiteBytes
	}
	if client == nil {
		client = http.DefaultClient
	}
	tree := fstest.MapFS{}
	var errs []error
	var total int64
	seen := map[string]bool{}
	got := map[string]map[string][]byte{} // verified files by entry name
	bundles := map[string][]byte{}        // their signature bundles
	for _, e := range site.Doc.Skills {
		fail := func(u string, format string, args ...any) {
			errs = append(errs, &SiteSkillError{Name: e.Name, URL: u, Err: fmt.Errorf(format, args...)})
		}
		if err := skill.ValidName(e.Name); err != nil {
			fail("", "%v; the entry is skipped", err)
			continue
		}
		if seen[e.Name] {
			fail("", "listed twice; only the first entry is used")
			continue
		}
		seen[e.Name] = true
		if e.Type != wire.IndexTypeSkillMD && e.Type != indexTypeArchive {
			fail("", "type %q is not %q or %q; the entry is skipped", e.Type, wire.IndexTypeSkillMD, indexTypeArchive)
			continue
		}
		bundle, err := siteBundle(e.Meta)
		if err != nil {
			fail("", "%v; the entry is skipped", err)
			continue
		}
		want, ok := strings.CutPrefix(e.Digest, "sha256:")
		if _, err := hex.DecodeString(want); !ok || err != nil || len(want) != 64 {
			fail("", "digest %q is not sha256:<64 hex digits>", e.Digest)
			continue
		}
		u, err := site.URL.Parse(e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fail("", "url %q is not an http(s) URL", e.URL)
			continue
		}
		limit := min(o.MaxSkillBytes, o.MaxTotalBytes-total)
		if limit <= 0 {
			fail(u.String(), "the site's skills add up to more than %d bytes in all; the rest are not read", o.MaxTotalBytes)
			continue
		}
		body, ctype, err := download(ctx, client, u, site.URL, headers, limit)
		if errors.Is(err, errTooLarge) && limit < o.MaxSkillBytes {
			err = fmt.Errorf("the site's skills add up to more than %d bytes in all; the rest are not read", o.MaxTotalBytes)
		}
		if err != nil {
			fail(u.String(), "%v", err)
			continue
		}
		sum := sha256.Sum256(body)
		if got := hex.EncodeToString(sum[:]); got != strings.ToLower(want) {
			fail(u.String(), "digest mismatch: the document says sha256:%s, the download is sha256:%s; the content was changed or corrupted, and is not used", want, got)
			continue
		}
		files := map[string][]byte{"SKILL.md": body}
		if e.Type == indexTypeArchive {
			if files, err = unpack(body, ctype, u.Path, o.MaxFiles, limit); err != nil {
				fail(u.String(), "archive: %v", err)
				continue
			}
		}
		// The entry's name is the skill's: a SKILL.md naming another skill
		// would be served under a name the document does not list.
		if doc, err := skill.Parse(files["SKILL.md"]); err == nil && doc.Frontmatter.Name() != e.Name {
			fail(u.String(), "SKILL.md names the skill %q, the document %q; the entry is skipped", doc.Frontmatter.Name(), e.Name)
			continue
		}
		for _, data := range files {
			total += int64(len(data))
		}
		got[e.Name] = files
		if bundle != nil {
			bundles[e.Name] = bundle
		}
	}
	dirs := map[string]string{}   // the folder of each skill laid out on its own
	nested := map[string]string{} // the others: "container/sub/folder"
	for name, files := range got {
		if in := nestedElsewhere(got, name, files); in != "" {
			nested[name] = in
			continue
		}
		dirs[name] = name
		if o.SkillDir != nil && bundles[name] != nil {
			if d := o.SkillDir(name, bundles[name]); validSkillDir(d, name) {
				dirs[name] = d
			}
		}
	}
	keepApart(dirs)
	for name, d := range dirs {
		for p, data := range got[name] {
			tree[d+"/"+p] = &fstest.MapFile{Data: data, Mode: 0o644}
		}
	}
	// A nested skill's folder is inside its container's, wherever that
	// went; a container may be nested too (each is strictly larger, so
	// this ends).
	var place func(name string) string
	place = func(name string) string {
		if d, ok := dirs[name]; ok {
			return d
		}
		container, sub, _ := strings.Cut(nested[name], "/")
		dirs[name] = place(container) + "/" + sub
		return dirs[name]
	}
	for name, b := range bundles {
		tree[sigfile.Path(place(name))] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	return tree, errs
}

// siteBundle returns the signature bundle a discovery document's entry
// carries under _meta (as a skills/list entry does), nil when it carries
// none; one that could not be a bundle is an error.
func siteBundle(meta json.RawMessage) ([]byte, error) {
	b := metaSignature(meta)
	switch {
	case b == nil:
		return nil, nil
	case len(b) > sigfile.MaxBytes:
		return nil, fmt.Errorf("_meta %q is %d bytes, over the %d-byte limit of a signature bundle", wire.MetaSignature, len(b), sigfile.MaxBytes)
	case b[0] != '{' || !json.Valid(b):
		return nil, fmt.Errorf("_meta %q is not a JSON object (a Sigstore bundle)", wire.MetaSignature)
	}
	return b, nil
}

// validSkillDir reports whether d can hold the skill name: a relative
// slash-separated path ending in name, at most skill.MaxURISegments deep,
// with no dot-folder (never published) and not under "index.json"
// (reserved).
func validSkillDir(d, name string) bool {
	return d != "" && fs.ValidPath(d) && path.Base(d) == name && !strings.Contains(d, "\\") &&
		strings.Count(d, "/") < skill.MaxURISegments && !strings.HasPrefix(d, "index.json/") &&
		!strings.HasPrefix(d, ".") && !strings.Contains(d, "/.")
}

// keepApart gives back its name as folder to every skill whose folder
// would be inside another's, or hold it: each skill keeps its own files.
// Names never overlap, so this ends, the same whatever the map's order.
func keepApart(dirs map[string]string) {
	for {
		var clash []string
		for a, da := range dirs {
			for b, db := range dirs {
				if a != b && da != a && (strings.HasPrefix(da+"/", db+"/") || strings.HasPrefix(db+"/", da+"/")) {
					clash = append(clash, a)
					break
				}
			}
		}
		if len(clash) == 0 {
			return
		}
		for _, a := range clash {
			dirs[a] = a
		}
	}
}

// nestedElsewhere returns where the skill name, with exactly files, is
// also inside another entry's archive (a nested skill, which the
// publisher lists on its own too), as "container/sub/folder", "" when it
// is not: it is then kept there only, so that the host does not see one
// skill twice.
func nestedElsewhere(got map[string]map[string][]byte, name string, files map[string][]byte) string {
	for other, ofiles := range got {
		if other == name || len(ofiles) <= len(files) {
			continue // strictly larger only: two entries never drop each other
		}
		for p := range ofiles {
			dir, ok := strings.CutSuffix(p, "/"+name+"/SKILL.md")
			if !ok && p != name+"/SKILL.md" {
				continue
			}
			if ok {
				dir += "/" + name + "/"
			} else {
				dir = name + "/"
			}
			same := true
			for fp, data := range files {
				if od, ok := ofiles[dir+fp]; !ok || !bytes.Equal(od, data) {
					same = false
					break
				}
			}
			if same {
				return other + "/" + strings.TrimSuffix(dir, "/")
			}
		}
	}
	return ""
}

// indexTypeArchive is the discovery entry type of a skill folder packed as
// a .tar.gz or .zip.
const indexTypeArchive = "archive"

var errTooLarge = errors.New("larger than")

// download GETs u, at most limit bytes, sending headers only when u is on
// the origin of doc.
func download(ctx context.Context, client *http.Client, u, doc *url.URL, headers map[string]string, limit int64) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", err
	}
	if u.Scheme == doc.Scheme && u.Host == doc.Host {
		for k, v := range headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("%s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(body)) > limit {
		return nil, "", fmt.Errorf("%w %d bytes; not read", errTooLarge, limit)
	}
	return body, resp.Header.Get("Content-Type"), nil
}

// unpack reads an archive entry: a .tar.gz or .zip, told apart by
// Content-Type, else the URL's extension, else its first bytes. Files sit
// at the root (SKILL.md among them); paths that escape the folder, links
// and special files are refused, as are more than maxFiles files or more
// than maxBytes unpacked.
func unpack(body []byte, ctype, urlPath string, maxFiles int, maxBytes int64) (map[string][]byte, error) {
	mt, _, _ := mime.ParseMediaType(ctype)
	isZip := false
	switch {
	case mt == "application/zip":
		isZip = true
	case mt == "application/gzip" || mt == "application/x-gzip" || mt == "application/x-tar+gzip":
	case strings.HasSuffix(urlPath, ".zip"):
		isZip = true
	case strings.HasSuffix(urlPath, ".tar.gz") || strings.HasSuffix(urlPath, ".tgz"):
	default:
		isZip = bytes.HasPrefix(body, []byte("PK\x03\x04"))
	}
	files := map[string][]byte{}
	var total int64
	add := func(name string, r io.Reader) error {
		clean := path.Clean(strings.TrimPrefix(name, "./"))
		if !fs.ValidPath(clean) || clean == "." || strings.Contains(name, "\\") {
			return fmt.Errorf("%q is not a relative path inside the skill folder; refused", name)
		}
		if _, dup := files[clean]; dup {
			return fmt.Errorf("%q appears twice", name)
		}
		if len(files) == maxFiles {
			return fmt.Errorf("more than %d files", maxFiles)
		}
		data, err := io.ReadAll(io.LimitReader(r, maxBytes-total+1))
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		if total += int64(len(data)); total > maxBytes {
			return fmt.Errorf("unpacks to more than %d bytes", maxBytes)
		}
		files[clean] = data
		return nil
	}
	if isZip {
		zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
		if err != nil {
			return nil, fmt.Errorf("not a zip file: %v", err)
		}
		for _, f := range zr.File {
			if f.FileInfo().IsDir() {
				continue
			}
			if !f.Mode().IsRegular() {
				return nil, fmt.Errorf("%q is a link or special file; refused", f.Name)
			}
			rc, err := f.Open()
			if err != nil {
				return nil, fmt.Errorf("%s: %v", f.Name, err)
			}
			err = add(f.Name, rc)
			rc.Close()
			if err != nil {
				return nil, err
			}
		}
	} else {
		gz, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("not a .tar.gz file: %v", err)
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("not a .tar.gz file: %v", err)
			}
			switch h.Typeflag {
			case tar.TypeDir, tar.TypeXGlobalHeader:
				continue
			case tar.TypeReg:
			default:
				return nil, fmt.Errorf("%q is a link or special file; refused", h.Name)
			}
			if err := add(h.Name, tr); err != nil {
				return nil, err
			}
		}
	}
	if _, ok := files["SKILL.md"]; !ok {
		return nil, errors.New("no SKILL.md at the archive's root")
	}
	return files, nil
}
