package host_test

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
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/wire"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// tarEntry is one member of a test archive: Type 0 is a regular file.
type tarEntry struct {
	Name, Body string
	Type       byte
	Size       int64 // of a file of zeros, when Body is ""
}

func mkTarGz(t *testing.T, ents ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range ents {
		h := &tar.Header{Name: e.Name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.Body))}
		if e.Size > 0 {
			h.Size = e.Size
		}
		if e.Type != 0 {
			h.Typeflag, h.Size, h.Linkname = e.Type, 0, "/etc/passwd"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.Size > 0 {
			tw.Write(make([]byte, e.Size))
		} else {
			tw.Write([]byte(e.Body))
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func mkZip(t *testing.T, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i < len(files); i += 2 {
		w, err := zw.Create(files[i])
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(files[i+1]))
	}
	zw.Close()
	return buf.Bytes()
}

const md = "---\nname: %s\ndescription: d\n---\nbody\n"

// TestFetchSite: every entry of a discovery document is downloaded,
// checked against its digest and laid out for a catalog; each way an entry
// can be bad or too big is refused with an error naming it, and the other
// entries are still read.
func TestFetchSite(t *testing.T) {
	manyFiles := []tarEntry{{Name: "SKILL.md", Body: fmt.Sprintf(md, "many")}}
	for i := range host.MaxSiteSkillFiles {
		manyFiles = append(manyFiles, tarEntry{Name: fmt.Sprintf("f/%d", i), Body: "x"})
	}
	for _, tc := range []struct {
		name   string
		typ    string
		art    []byte
		ctype  string
		url    string   // default /a/<name>
		digest string   // default that of art
		files  []string // want these files under name/, or
		err    string   // this error
	}{
		{name: "plain", typ: "skill-md", art: []byte(fmt.Sprintf(md, "plain")), files: []string{"SKILL.md"}},
		{name: "tgz", typ: "archive", art: mkTarGz(t, tarEntry{Name: "SKILL.md", Body: fmt.Sprintf(md, "tgz")}, tarEntry{Name: "scripts/run.sh", Body: "echo"}),
			url: "/a/tgz.tar.gz", files: []string{"SKILL.md", "scripts/run.sh"}},
		{name: "zipped", typ: "archive", art: mkZip(t, "SKILL.md", fmt.Sprintf(md, "zipped"), "ref/a.md", "a"), ctype: "application/zip", files: []string{"SKILL.md", "ref/a.md"}},
		{name: "sniffed", typ: "archive", art: mkZip(t, "SKILL.md", fmt.Sprintf(md, "sniffed")), ctype: "application/octet-stream", files: []string{"SKILL.md"}},
		{name: "tampered", typ: "skill-md", art: []byte(fmt.Sprintf(md, "tampered")), digest: sha([]byte("other")), err: "digest mismatch"},
		{name: "bad-digest", typ: "skill-md", art: []byte("x"), digest: "md5:00", err: "is not sha256:"},
		{name: "../evil", typ: "skill-md", art: []byte("x"), url: "/a/evil", err: "must be lowercase"},
		{name: "misnamed", typ: "skill-md", art: []byte(fmt.Sprintf(md, "other")), err: `SKILL.md names the skill "other"`},
		{name: "bundle", typ: "bundle", art: []byte("x"), err: `type "bundle"`},
		{name: "file-url", typ: "skill-md", art: []byte("x"), url: "file:///etc/passwd", err: "not an http(s) URL"},
		{name: "missing", typ: "skill-md", art: []byte("x"), url: "/nope", err: "404"},
		{name: "huge", typ: "skill-md", art: make([]byte, host.MaxSiteSkillBytes+1), err: "larger than 16777216 bytes"},
		{name: "dotdot", typ: "archive", art: mkTarGz(t, tarEntry{Name: "SKILL.md", Body: "x"}, tarEntry{Name: "../../.bashrc", Body: "x"}), ctype: "application/gzip", err: "not a relative path"},
		{name: "abs", typ: "archive", art: mkTarGz(t, tarEntry{Name: "SKILL.md", Body: "x"}, tarEntry{Name: "/etc/cron.d/x", Body: "x"}), ctype: "application/gzip", err: "not a relative path"},
		{name: "zipslip", typ: "archive", art: mkZip(t, "SKILL.md", "x", "../x", "x"), ctype: "application/zip", err: "not a relative path"},
		{name: "symlink", typ: "archive", art: mkTarGz(t, tarEntry{Name: "SKILL.md", Body: "x"}, tarEntry{Name: "l", Type: tar.TypeSymlink}), ctype: "application/gzip", err: "link or special file"},
		{name: "hardlink", typ: "archive", art: mkTarGz(t, tarEntry{Name: "SKILL.md", Body: "x"}, tarEntry{Name: "l", Type: tar.TypeLink}), ctype: "application/gzip", err: "link or special file"},
		{name: "many", typ: "archive", art: mkTarGz(t, manyFiles...), ctype: "application/gzip", err: "more than 512 files"},
		{name: "bomb", typ: "archive", art: mkTarGz(t, tarEntry{Name: "SKILL.md", Body: "x"}, tarEntry{Name: "zeros", Size: host.MaxSiteSkillBytes}), ctype: "application/gzip", err: "unpacks to more than 16777216 bytes"},
		{name: "twice", typ: "archive", art: mkTarGz(t, tarEntry{Name: "SKILL.md", Body: "x"}, tarEntry{Name: "./SKILL.md", Body: "y"}), ctype: "application/gzip", err: "appears twice"},
		{name: "no-skill-md", typ: "archive", art: mkTarGz(t, tarEntry{Name: "pkg/SKILL.md", Body: "x"}), ctype: "application/gzip", err: "no SKILL.md at the archive's root"},
		{name: "not-archive", typ: "archive", art: []byte("hello"), url: "/a/x.tar.gz", err: "not a .tar.gz file"},
	} {
		t.Run(strings.ReplaceAll(tc.name, "/", "_"), func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/nope" {
					http.NotFound(w, r)
					return
				}
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.Write(tc.art)
			}))
			defer ts.Close()
			u, d := tc.url, tc.digest
			if u == "" {
				u = "/a/" + tc.name
			}
			if d == "" {
				d = sha(tc.art)
			}
			// A good entry after the case's: one bad entry spoils no other.
			good := []byte(fmt.Sprintf(md, "good"))
			goodSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(good) }))
			defer goodSrv.Close()
			site := siteOf(t, ts.URL, wire.IndexEntry{Name: tc.name, Type: tc.typ, Description: "d", URL: u, Digest: d},
				wire.IndexEntry{Name: "good", Type: "skill-md", Description: "d", URL: goodSrv.URL + "/good", Digest: sha(good)})
			tree, errs := host.FetchSite(context.Background(), nil, site, nil, nil)
			var got []string
			fs.WalkDir(tree, ".", func(p string, de fs.DirEntry, err error) error {
				if err == nil && !de.IsDir() {
					got = append(got, p)
				}
				return nil
			})
			if tc.err != "" {
				var se *host.SiteSkillError
				if len(errs) == 0 || !errors.As(errs[0], &se) || se.Name != tc.name || !errors.Is(errs[0], host.ErrSiteSkill) || !strings.Contains(errs[0].Error(), tc.err) {
					t.Fatalf("errors %v; want one for %q containing %q", errs, tc.name, tc.err)
				}
				for _, p := range got {
					if !strings.HasPrefix(p, "good/") {
						t.Errorf("refused entry left %s in the tree", p)
					}
				}
				if len(got) != 1 || got[0] != "good/SKILL.md" {
					t.Errorf("tree %v; the good entry must still be read", got)
				}
				return
			}
			if len(errs) != 0 {
				t.Fatalf("errors %v", errs)
			}
			want := map[string]bool{"good/SKILL.md": true}
			for _, f := range tc.files {
				want[tc.name+"/"+f] = true
			}
			if len(got) != len(want) {
				t.Errorf("tree %v, want %v", got, want)
			}
			for _, p := range got {
				if !want[p] {
					t.Errorf("tree %v, want %v", got, want)
				}
			}
		})
	}
}

// siteOf reads the discovery document listing entries from a server at
// base, as ReadSite does.
func siteOf(t *testing.T, base string, entries ...wire.IndexEntry) *host.Site {
	t.Helper()
	doc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"$schema":%q,"skills":[`, wire.IndexSchema)
		for i, e := range entries {
			if i > 0 {
				w.Write([]byte(","))
			}
			fmt.Fprintf(w, `{"name":%q,"type":%q,"description":"d","url":%q,"digest":%q`, e.Name, e.Type, e.URL, e.Digest)
			if len(e.Meta) > 0 {
				fmt.Fprintf(w, `,"_meta":%s`, e.Meta)
			}
			w.Write([]byte("}"))
		}
		w.Write([]byte("]}"))
	}))
	defer doc.Close()
	s, err := host.ReadSite(context.Background(), nil, doc.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Entry URLs are relative to the document; point them at base.
	s.URL.Host = strings.TrimPrefix(base, "http://")
	return s
}

// Headers given for a site go to its own origin only, never to an
// artifact URL on another.
func TestFetchSiteHeaders(t *testing.T) {
	body := func(name string) []byte { return []byte(fmt.Sprintf(md, name)) }
	var auth []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Host+" "+r.Header.Get("Authorization"))
		w.Write(body(strings.Trim(r.URL.Path, "/")))
	})
	same, other := httptest.NewServer(h), httptest.NewServer(h)
	defer same.Close()
	defer other.Close()
	site := siteOf(t, same.URL, wire.IndexEntry{Name: "a", Type: "skill-md", URL: "/a", Digest: sha(body("a"))},
		wire.IndexEntry{Name: "b", Type: "skill-md", URL: other.URL + "/b", Digest: sha(body("b"))})
	if _, errs := host.FetchSite(context.Background(), nil, site, map[string]string{"Authorization": "Bearer s3cret"}, nil); len(errs) != 0 {
		t.Fatal(errs)
	}
	sameHost, otherHost := strings.TrimPrefix(same.URL, "http://"), strings.TrimPrefix(other.URL, "http://")
	if len(auth) != 2 || auth[0] != sameHost+" Bearer s3cret" || auth[1] != otherHost+" " {
		t.Errorf("requests %q: the token must reach the site's origin only", auth)
	}
}

// A site's skills together are bounded too: the entry that would pass
// MaxTotalBytes is refused, saying so, and those before it are kept.
func TestFetchSiteTotal(t *testing.T) {
	a, b := []byte(fmt.Sprintf(md, "a")), []byte(fmt.Sprintf(md, "b"))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(map[string][]byte{"/a": a, "/b": b}[r.URL.Path])
	}))
	defer ts.Close()
	site := siteOf(t, ts.URL, wire.IndexEntry{Name: "a", Type: "skill-md", URL: "/a", Digest: sha(a)},
		wire.IndexEntry{Name: "b", Type: "skill-md", URL: "/b", Digest: sha(b)})
	limit := int64(len(a) + len(b) - 1)
	tree, errs := host.FetchSite(context.Background(), nil, site, nil, &host.SiteOptions{MaxTotalBytes: limit})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `skill "b"`) || !strings.Contains(errs[0].Error(), fmt.Sprintf("more than %d bytes in all", limit)) {
		t.Errorf("errors %v", errs)
	}
	if _, err := fs.Stat(tree, "a/SKILL.md"); err != nil {
		t.Error(err)
	}
	if _, err := fs.Stat(tree, "b/SKILL.md"); err == nil {
		t.Error("b was kept past the bound")
	}
}

// A nested skill its publisher also lists on its own is kept once, inside
// its parent; entries that merely share a name with a nested skill, or
// that contain each other, are all kept.
func TestFetchSiteNested(t *testing.T) {
	child := fmt.Sprintf(md, "child")
	parent := mkTarGz(t, tarEntry{Name: "SKILL.md", Body: fmt.Sprintf(md, "parent")}, tarEntry{Name: "child/SKILL.md", Body: child},
		tarEntry{Name: "other/SKILL.md", Body: fmt.Sprintf(md, "other")})
	other := []byte(fmt.Sprintf(md, "other") + "different")
	arts := map[string][]byte{"/parent": parent, "/child": []byte(child), "/other": other,
		"/x": mkTarGz(t, tarEntry{Name: "SKILL.md", Body: "x"}, tarEntry{Name: "y/SKILL.md", Body: "y"}),
		"/y": mkTarGz(t, tarEntry{Name: "SKILL.md", Body: "y"}, tarEntry{Name: "x/SKILL.md", Body: "x"})}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(arts[r.URL.Path])
	}))
	defer ts.Close()
	var ents []wire.IndexEntry
	for _, n := range []string{"child", "parent", "other", "x", "y"} {
		typ := "archive"
		if n == "child" || n == "other" {
			typ = "skill-md"
		}
		ents = append(ents, wire.IndexEntry{Name: n, Type: typ, URL: "/" + n, Digest: sha(arts["/"+n])})
	}
	site := siteOf(t, ts.URL, ents...)
	tree, errs := host.FetchSite(context.Background(), nil, site, nil, nil)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	for p, want := range map[string]bool{"parent/child/SKILL.md": true, "child/SKILL.md": false, "other/SKILL.md": true, "x/SKILL.md": true, "y/SKILL.md": true} {
		if _, err := fs.Stat(tree, p); (err == nil) != want {
			t.Errorf("%s present = %v, want %v", p, err == nil, want)
		}
	}
}
