package web_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/web"
	"github.com/skillport/skillport/wire"
)

const pdfBody = `# PDF tools

Use **pdfplumber**.

| Tool | Use |
|------|-----|
| extract | text |

` + "```python\nimport pdfplumber\n```\n"

func sampleFS() fstest.MapFS {
	return fstest.MapFS{
		"pdf/SKILL.md":             skillMD("pdf", "Extract text and tables from PDF files.", pdfBody),
		"pdf/scripts/run.sh":       {Data: []byte("#!/bin/sh\necho <b>hi</b>\n")},
		"pdf/assets/blob.bin":      {Data: []byte{0, 1, 2, 0xff, 0xfe}},
		"acme/review/SKILL.md":     skillMD("review", "Review code for bugs.", "# Review\n"),
		"acme/review/checklist.md": {Data: []byte("- [ ] tests\n")},
		"nul/SKILL.md":             skillMD("nul", "\"a NUL \\0 by a YAML escape, and a literal \\\\u0000\"", "# nul\n"),
	}
}

func TestPagesCarryCSP(t *testing.T) {
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, sampleFS())), nil)
	for _, p := range []string{"/", "/s/pdf/", "/s/pdf/scripts/run.sh", "/raw/pdf/scripts/run.sh", "/s/nope/", web.WellKnownPath, "/search.json?q=pdf"} {
		resp, _ := get(t, ts.URL+p)
		if got := resp.Header.Get("Content-Security-Policy"); got != web.CSP {
			t.Errorf("%s: CSP %q, want %q", p, got, web.CSP)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", p)
		}
	}
	for _, bad := range []string{"'unsafe-inline'", "'unsafe-eval'", "*"} {
		if strings.Contains(web.CSP, bad) {
			t.Errorf("CSP allows %s", bad)
		}
	}
}

func TestCatalogPage(t *testing.T) {
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, sampleFS())), nil)
	resp, body := get(t, ts.URL+"/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	mustContain(t, "/", body, `href="/s/pdf/"`, "Extract text and tables from PDF files.", `href="/s/acme/review/"`,
		`<span class="prefix">acme</span>`, "3 skills", `src="/assets/app.js"`)
	mustNotContain(t, "/", body, "<script>")
	// The no-JavaScript search.
	_, body = get(t, ts.URL+"/?q=TABLES+pdf")
	mustContain(t, "?q=", body, `href="/s/pdf/"`, "1 skill")
	mustNotContain(t, "?q=", body, `href="/s/acme/review/"`)
	_, body = get(t, ts.URL+"/?q=nothing-matches")
	mustContain(t, "?q=none", body, "No skills match")
}

func TestCatalogPagination(t *testing.T) {
	fsys := fstest.MapFS{}
	for i := range 25 {
		n := fmt.Sprintf("s%02d", i)
		fsys[n+"/SKILL.md"] = skillMD(n, "Skill number "+n+".", "x\n")
	}
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, fsys)), &web.Options{PageSize: 10})
	_, body := get(t, ts.URL+"/")
	mustContain(t, "page 1", body, "/s/s00/", "/s/s09/", "page 1 of 3", `href="/?page=2"`)
	mustNotContain(t, "page 1", body, "/s/s10/", `rel="prev"`)
	_, body = get(t, ts.URL+"/?page=3")
	mustContain(t, "page 3", body, "/s/s24/", `href="/?page=2"`)
	mustNotContain(t, "page 3", body, "/s/s19/", `rel="next"`)
	for _, bad := range []string{"/?page=0", "/?page=x", "/?q=" + strings.Repeat("a", web.MaxQueryBytes+1), "/search.json?limit=1000"} {
		if resp, _ := get(t, ts.URL+bad); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", bad, resp.Status)
		}
	}
	if _, err := web.New(published.NewCatalogSource(openCatalog(t, fsys)), &web.Options{PageSize: web.MaxPageSize + 1}); err == nil {
		t.Error("PageSize beyond MaxPageSize accepted")
	}
}

func TestSkillPage(t *testing.T) {
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, sampleFS())), nil)
	resp, body := get(t, ts.URL+"/s/pdf/")
	if resp.StatusCode != 200 {
		t.Fatalf("skill page: %s", resp.Status)
	}
	sum := sha256.Sum256([]byte("#!/bin/sh\necho <b>hi</b>\n"))
	mustContain(t, "skill page", body,
		"<h1>PDF tools</h1>", "<strong>pdfplumber</strong>", "<table>", "<th>Tool</th>", `<code class="language-python">`,
		"<th scope=\"row\">name</th><td>pdf</td>", "<th scope=\"row\">description</th>",
		`href="/s/pdf/scripts/run.sh"`, `href="/raw/pdf/scripts/run.sh"`, "sha256:"+hex.EncodeToString(sum[:]),
		"Claude Desktop", "Cursor", "VS Code", "Codex", "skillport gateway", "skillport pull",
		"Hosts with the Skills Extension", ts.URL+"/mcp", "--skill &#39;pdf&#39; --to .claude/skills", "[mcp_servers.skillport]", "&#34;include&#34;: [\n")
	// Without the trailing slash: redirected to the canonical address, so
	// that relative links in SKILL.md resolve to the skill's files.
	resp, _ = get(t, ts.URL+"/s/pdf")
	if resp.Request.URL.Path != "/s/pdf/" {
		t.Errorf("/s/pdf ended at %s", resp.Request.URL.Path)
	}
	resp, body = get(t, ts.URL+"/s/missing/")
	if resp.StatusCode != 404 {
		t.Errorf("missing skill: %s", resp.Status)
	}
	mustContain(t, "404", body, "no skill or file at /s/missing/")
}

func TestFileViewAndDownload(t *testing.T) {
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, sampleFS())), nil)
	_, body := get(t, ts.URL+"/s/pdf/scripts/run.sh")
	mustContain(t, "file view", body, "echo &lt;b&gt;hi&lt;/b&gt;", `href="/raw/pdf/scripts/run.sh"`)
	mustNotContain(t, "file view", body, "<b>hi</b>")
	_, body = get(t, ts.URL+"/s/pdf/assets/blob.bin")
	mustContain(t, "binary view", body, "not text")

	for _, tc := range []struct {
		path string
		want []byte
	}{
		{"/raw/pdf/scripts/run.sh", []byte("#!/bin/sh\necho <b>hi</b>\n")},
		{"/raw/pdf/assets/blob.bin", []byte{0, 1, 2, 0xff, 0xfe}},
		{"/raw/pdf/SKILL.md", sampleFS()["pdf/SKILL.md"].Data},
	} {
		resp, got := get(t, ts.URL+tc.path)
		if got != string(tc.want) {
			t.Errorf("%s: %q, want %q", tc.path, got, tc.want)
		}
		sum := sha256.Sum256(tc.want)
		if h, want := resp.Header.Get("Repr-Digest"), "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":"; h != want {
			t.Errorf("%s: Repr-Digest %q, want %q", tc.path, h, want)
		}
		if h := resp.Header.Get("ETag"); h != `"sha256:`+hex.EncodeToString(sum[:])+`"` {
			t.Errorf("%s: ETag %q", tc.path, h)
		}
		if ct, cd := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"); ct != "application/octet-stream" || !strings.HasPrefix(cd, "attachment") {
			t.Errorf("%s: served as %q, %q; want an octet-stream attachment", tc.path, ct, cd)
		}
	}
	for _, p := range []string{"/raw/pdf/nope", "/raw/pdf", "/raw/../pdf/SKILL.md", "/s/pdf/../acme/review/SKILL.md"} {
		if resp, _ := get(t, ts.URL+p); resp.StatusCode != 404 && resp.Request.URL.Path == p {
			t.Errorf("%s: %s", p, resp.Status)
		}
	}
}

// A reload shows without a restart: the pages read the source's current
// snapshot on every request.
func TestFollowsSnapshot(t *testing.T) {
	src := published.NewCatalogSource(openCatalog(t, sampleFS()))
	ts := serveWeb(t, src, nil)
	_, body := get(t, ts.URL+"/")
	mustNotContain(t, "before", body, "/s/fresh/")
	fsys := sampleFS()
	fsys["fresh/SKILL.md"] = skillMD("fresh", "Added while serving.", "# Fresh\n")
	src.Swap(openCatalog(t, fsys))
	_, body = get(t, ts.URL+"/")
	mustContain(t, "after swap", body, "/s/fresh/", "Added while serving.")
	_, body = get(t, ts.URL+"/?q=while")
	mustContain(t, "search after swap", body, "/s/fresh/")
	if resp, _ := get(t, ts.URL+"/s/fresh/"); resp.StatusCode != 200 {
		t.Errorf("new skill page: %s", resp.Status)
	}
	_, body = get(t, ts.URL+web.WellKnownPath)
	mustContain(t, "well-known after swap", body, `"name":"fresh"`, ts.URL+"/raw/fresh/SKILL.md")
}

// Every way to a skill goes through Options.Visible.
func TestVisibility(t *testing.T) {
	hide := func(_ *http.Request, sk *catalog.Skill) bool { return sk.Name != "review" }
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, sampleFS())), &web.Options{Visible: hide})
	_, body := get(t, ts.URL+"/")
	mustNotContain(t, "catalog", body, "review")
	_, body = get(t, ts.URL+"/search.json?q=review")
	mustNotContain(t, "search.json", body, "acme/review")
	_, body = get(t, ts.URL+web.WellKnownPath)
	mustNotContain(t, "well-known", body, "review")
	for _, p := range []string{"/s/acme/review/", "/s/acme/review/checklist.md", "/raw/acme/review/checklist.md", "/raw/acme/review/SKILL.md"} {
		if resp, _ := get(t, ts.URL+p); resp.StatusCode != 404 {
			t.Errorf("%s of a hidden skill: %s", p, resp.Status)
		}
	}
}

func TestSearchJSON(t *testing.T) {
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, sampleFS())), nil)
	_, body := get(t, ts.URL+"/search.json?q=REVIEW")
	var res struct {
		Hits []struct{ Name, Path, Prefix, Description string }
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.Hits[0].Path != "acme/review" || res.Hits[0].Prefix != "acme" {
		t.Errorf("hits %+v", res.Hits)
	}
	// Words match by prefix, as the user types, and all must match.
	for q, want := range map[string]int{"rev": 1, "ext tab": 1, "ext bugs": 0, "acme": 1, "e": 2, "zzz": 0} {
		_, body := get(t, ts.URL+"/search.json?q="+url.QueryEscape(q))
		res.Hits = nil
		if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Hits) != want {
			t.Errorf("q=%q: %d hits, want %d (%v)", q, len(res.Hits), want, err)
		}
	}
}

// The discovery document validates against the 0.2.0 schema and agrees
// with the MCP listing: same skills, SKILL.md digests, downloadable URLs.
func TestWellKnownSchema(t *testing.T) {
	src := published.NewCatalogSource(openCatalog(t, sampleFS()))
	ts := serveWeb(t, src, nil)
	resp, body := get(t, ts.URL+web.WellKnownPath)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("testdata/discovery-0.2.0.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Fatalf("index.json does not validate: %v\n%s", err, body)
	}
	var d wire.Discovery
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	if d.MCP != ts.URL+"/mcp" {
		t.Errorf("mcp %q", d.MCP)
	}
	// The document agrees with what the MCP endpoint the document names
	// lists over skills/list: the same skills in the same order, the same
	// descriptions; a skill of SKILL.md alone is a skill-md entry with the
	// listed SKILL.md digest, any other an archive entry whose files are
	// exactly the listed ones, byte for byte.
	listed := listOverMCP(t, d.MCP)
	if len(d.Skills) != len(listed) || len(listed) == 0 {
		t.Fatalf("%d entries, skills/list has %d", len(d.Skills), len(listed))
	}
	archives := 0
	for i, e := range d.Skills {
		l := listed[i]
		files := l.Resources.Files
		if e.Name != l.Frontmatter.Name() || e.Description != l.Frontmatter.Description() {
			t.Errorf("entry %d: %+v; skills/list: %s %q", i, e, l.Frontmatter.Name(), l.Frontmatter.Description())
		}
		resp, got := get(t, e.URL)
		if sum := sha256.Sum256([]byte(got)); "sha256:"+hex.EncodeToString(sum[:]) != e.Digest || resp.Header.Get("Repr-Digest") == "" {
			t.Errorf("%s: bytes do not match the digest", e.URL)
		}
		if len(files) == 1 {
			if e.Type != wire.IndexTypeSkillMD || e.Digest != files[0].Digest {
				t.Errorf("entry %d: %+v; skills/list SKILL.md %s", i, e, files[0].Digest)
			}
			continue
		}
		archives++
		if e.Type != "archive" || !strings.HasSuffix(e.URL, ".tar.gz") || resp.Header.Get("Content-Type") != "application/gzip" {
			t.Errorf("entry %d: %+v (%s); want an archive", i, e, resp.Header.Get("Content-Type"))
			continue
		}
		packed := untar(t, []byte(got))
		root := strings.TrimSuffix(l.URI, "SKILL.md")
		if len(packed) != len(files) {
			t.Errorf("%s holds %d files, skills/list %d", e.URL, len(packed), len(files))
		}
		for _, f := range files {
			sum := sha256.Sum256(packed[strings.TrimPrefix(f.URI, root)])
			if "sha256:"+hex.EncodeToString(sum[:]) != f.Digest {
				t.Errorf("%s: %s differs from the listed %s", e.URL, strings.TrimPrefix(f.URI, root), f.URI)
			}
		}
	}
	if archives == 0 {
		t.Error("no archive entry: the sample has skills with several files")
	}
	// The schema can fail: a document without digests does not validate.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"$schema":"https://schemas.agentskills.io/discovery/0.2.0/schema.json","skills":[{"name":"x","type":"skill-md","description":"d","url":"/x"}]}`))
	if sch.Validate(bad) == nil {
		t.Error("schema accepts an entry without digest")
	}
}

// A text file beyond MaxViewBytes is shown cut at a character boundary,
// saying so; its download stays whole.
func TestFileViewLimit(t *testing.T) {
	big := "a" + strings.Repeat("é", web.MaxViewBytes/2) // the cut falls inside a 2-byte rune
	fsys := sampleFS()
	fsys["pdf/big.txt"] = &fstest.MapFile{Data: []byte(big)}
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, fsys)), nil)
	_, body := get(t, ts.URL+"/s/pdf/big.txt")
	mustContain(t, "big view", body, "Shown up to 2 MiB")
	if !utf8.ValidString(body) || len(body) > web.MaxViewBytes+8192 {
		t.Errorf("view: %d bytes, valid UTF-8 %v", len(body), utf8.ValidString(body))
	}
	if _, raw := get(t, ts.URL+"/raw/pdf/big.txt"); raw != big {
		t.Errorf("download: %d bytes, want %d", len(raw), len(big))
	}
}

// untar returns the files of a .tar.gz by name, checking that each has
// the mode of pull's "#!" rule (the samples are fstest.MapFS trees, which
// record no mode).
func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out, modes := untarModes(t, b)
	for name, data := range out {
		want := int64(0o644)
		if bytes.HasPrefix(data, []byte("#!")) {
			want = 0o755
		}
		if modes[name] != want {
			t.Errorf("archive: %s has mode %o, want %o", name, modes[name], want)
		}
	}
	return out
}

// untarModes returns the files of a .tar.gz and their modes, by name.
func untarModes(t *testing.T, b []byte) (map[string][]byte, map[string]int64) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out, modes := map[string][]byte{}, map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, modes
		}
		if err != nil || h.Typeflag != tar.TypeReg {
			t.Fatalf("archive: %v, %+v", err, h)
		}
		out[h.Name], _ = io.ReadAll(tr)
		modes[h.Name] = h.Mode
	}
}
