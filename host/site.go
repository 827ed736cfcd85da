package host

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	}
	for name, files := range got {
		if !nestedElsewhere(got, name, files) {
			for p, data := range files {
				tree[name+"/"+p] = &fstest.MapFile{Data: data, Mode: 0o644}
			}
		}
	}
	return tree, errs
}

// nestedElsewhere reports whether the skill name, with exactly files, is
// also inside another entry's archive (a nested skill, which the
// publisher lists on its own too): it is then kept there only, so that
// the host does not see one skill twice.
func nestedElsewhere(got map[string]map[string][]byte, name string, files map[string][]byte) bool {
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
				return true
			}
		}
	}
	return false
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
