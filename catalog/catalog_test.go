package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/skillport/skillport/internal/skilltest"
	"github.com/skillport/skillport/skill"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func md(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n# " + name + "\n"
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for p, c := range files {
		m[p] = &fstest.MapFile{Data: []byte(c), Mode: 0o644, ModTime: time.Unix(1e9, 0)}
	}
	return m
}

func open(t *testing.T, fsys fs.FS, opts *Options) *Catalog {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	c, err := Open(fsys, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func uris(c *Catalog) []string {
	var out []string
	for _, s := range c.Skills() {
		out = append(out, s.URI)
	}
	return out
}

func diagRules(c *Catalog) []string {
	var out []string
	for _, d := range c.Diagnostics() {
		out = append(out, d.Path+":"+d.Rule)
	}
	return out
}

var tree = map[string]string{
	"pdf/SKILL.md":                  md("pdf", "PDFs."),
	"pdf/references/FORMS.md":       "# Forms\n",
	"pdf/assets/logo.bin":           "\x00\x01\x02\xff",
	"pdf/forms/SKILL.md":            md("forms", "Forms."),
	"pdf/forms/guide.txt":           "héllo",
	"acme/billing/refunds/SKILL.md": md("refunds", "Refunds."),
	"acme/billing/refunds/e.md":     "email",
	"README.md":                     "not part of any skill",
	"notes/todo.txt":                "not part of any skill either",
}

func TestOpenLayout(t *testing.T) {
	c := open(t, mapFS(tree), nil)
	want := []string{"skill://acme/billing/refunds/SKILL.md", "skill://pdf/SKILL.md", "skill://pdf/forms/SKILL.md"}
	if got := uris(c); !slices.Equal(got, want) {
		t.Fatalf("skills %v, want %v", got, want)
	}
	if d := c.Diagnostics(); len(d) != 0 {
		t.Errorf("unexpected diagnostics %v", d)
	}
	pdf := c.Skill("skill://pdf/SKILL.md")
	if pdf.Root != "skill://pdf" || pdf.Path != "pdf" || pdf.Name != "pdf" || pdf.Dir != "pdf" {
		t.Errorf("pdf skill %+v", pdf)
	}
	var files []string
	for _, f := range pdf.Files {
		files = append(files, f.URI)
	}
	wantFiles := []string{"skill://pdf/SKILL.md", "skill://pdf/assets/logo.bin", "skill://pdf/forms/SKILL.md", "skill://pdf/forms/guide.txt", "skill://pdf/references/FORMS.md"}
	if !slices.Equal(files, wantFiles) {
		t.Errorf("pdf files %v, want %v (SKILL.md first, nested skill's files included)", files, wantFiles)
	}
	if pdf.Size != int64(len(tree["pdf/SKILL.md"])+len("# Forms\n")+4+len(tree["pdf/forms/SKILL.md"])+len("héllo")) {
		t.Errorf("pdf size %d", pdf.Size)
	}
	forms := c.Skill("skill://pdf/forms/SKILL.md")
	if len(forms.Files) != 2 || forms.Files[1] != c.File("skill://pdf/forms/guide.txt") {
		t.Errorf("nested skill files %v; a file shared by two skills must be the same *File", forms.Files)
	}
	for p, content := range tree {
		f := c.File("skill://" + p)
		if strings.HasPrefix(p, "README") || strings.HasPrefix(p, "notes/") {
			if f != nil {
				t.Errorf("%s is outside every skill but was published", p)
			}
			continue
		}
		if f == nil {
			t.Errorf("%s not published", p)
			continue
		}
		if f.Digest != digest(content) || f.Size != int64(len(content)) || f.Path != p {
			t.Errorf("%s: %+v", p, f)
		}
		data, err := c.ReadFile(f)
		if err != nil || string(data) != content {
			t.Errorf("ReadFile(%s) = %q, %v", p, data, err)
		}
	}
	for uri, want := range map[string]struct {
		mime string
		text bool
	}{
		"skill://pdf/SKILL.md":              {"text/markdown", true},
		"skill://pdf/assets/logo.bin":       {"application/octet-stream", false},
		"skill://pdf/forms/guide.txt":       {"text/plain", true},
		"skill://acme/billing/refunds/e.md": {"text/markdown", true},
	} {
		f := c.File(uri)
		if f.MIMEType != want.mime || f.Text != want.text {
			t.Errorf("%s: mime %q text %v, want %q %v", uri, f.MIMEType, f.Text, want.mime, want.text)
		}
	}
	if st := c.Stats(); st.Skills != 3 || st.Invalid != 0 || st.Files != 7 {
		t.Errorf("stats %+v", st)
	}
}

func TestDirectories(t *testing.T) {
	c := open(t, mapFS(tree), nil)
	children := func(uri string) string {
		d := c.Dir(uri)
		if d == nil {
			return "<none>"
		}
		var parts []string
		for _, ch := range d.Children {
			kind := "f"
			if ch.IsDir() {
				kind = "d"
			}
			parts = append(parts, kind+":"+ch.URI)
		}
		return strings.Join(parts, " ")
	}
	tests := map[string]string{
		"skill://acme":                 "d:skill://acme/billing",
		"skill://acme/billing":         "d:skill://acme/billing/refunds",
		"skill://acme/billing/refunds": "f:skill://acme/billing/refunds/SKILL.md f:skill://acme/billing/refunds/e.md",
		"skill://pdf":                  "f:skill://pdf/SKILL.md d:skill://pdf/assets d:skill://pdf/forms d:skill://pdf/references",
		"skill://pdf/forms":            "f:skill://pdf/forms/SKILL.md f:skill://pdf/forms/guide.txt",
		"skill://pdf/references":       "f:skill://pdf/references/FORMS.md",
		"skill://pdf/":                 "<none>",
		"skill://notes":                "<none>",
		"skill://pdf/SKILL.md":         "<none>",
	}
	for uri, want := range tests {
		if got := children(uri); got != want {
			t.Errorf("Dir(%s) children %q, want %q", uri, got, want)
		}
	}
	if c.Dir("skill://pdf/forms").Skill != c.Skill("skill://pdf/forms/SKILL.md") {
		t.Error("a nested skill's directory must belong to the nested skill")
	}
	if c.Dir("skill://acme").Skill != nil {
		t.Error("a prefix level belongs to no skill")
	}
}

func TestPrefixAndScheme(t *testing.T) {
	c := open(t, mapFS(map[string]string{"pdf/SKILL.md": md("pdf", "d")}), &Options{Prefix: "acme/tools", Scheme: "repo"})
	if got := uris(c); !slices.Equal(got, []string{"repo://acme/tools/pdf/SKILL.md"}) {
		t.Fatalf("got %v", got)
	}
	if c.Dir("repo://acme") == nil || c.Dir("repo://acme/tools") == nil {
		t.Error("prefix levels are directory resources")
	}
	for _, bad := range []string{"Acme", "a//b", "a/../b", "index.json", "a b", "/a"} {
		if _, err := Open(mapFS(nil), &Options{Prefix: bad}); err == nil {
			t.Errorf("prefix %q accepted", bad)
		}
	}
}

// The same tree must give the same catalog whether it is a directory, an
// os.DirFS or an in-memory fs.
func TestSameCatalogAcrossFS(t *testing.T) {
	dir := skilltest.WriteTree(t, tree)
	a := open(t, mapFS(tree), nil)
	b := open(t, os.DirFS(dir), nil)
	c, err := OpenDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() != b.ID() || a.ID() != c.ID() {
		t.Errorf("IDs differ: MapFS %s, DirFS %s, OpenDir %s", a.ID(), b.ID(), c.ID())
	}
}

func TestInvalidSkillsAreExcludedAlone(t *testing.T) {
	files := map[string]string{
		"good/SKILL.md":         md("good", "fine"),
		"mismatch/SKILL.md":     md("other", "name differs from dir"),
		"noname/SKILL.md":       "---\ndescription: d\n---\n",
		"bomb/SKILL.md":         "---\nname: bomb\ndescription: &a x\nb: *a\n---\n",
		"unterminated/SKILL.md": "---\nname: unterminated\n",
		"Upper/SKILL.md":        md("Upper", "d"),
		"bad_dir/SKILL.md":      md("bad-dir", "d"),
		"warn/SKILL.md":         "---\nname: warn\ndescription: d\nhooks: x\n---\n",
		"binary/SKILL.md":       "---\nname: binary\ndescription: d\n---\n\xff",
	}
	c := open(t, mapFS(files), &Options{Strict: true})
	if got := uris(c); !slices.Equal(got, []string{"skill://good/SKILL.md", "skill://warn/SKILL.md"}) {
		t.Errorf("published %v", got)
	}
	want := []string{
		"Upper/SKILL.md:name-format",
		"bad_dir/SKILL.md:name-directory",
		"binary/SKILL.md:encoding",
		"bomb/SKILL.md:frontmatter-syntax",
		"mismatch/SKILL.md:name-directory",
		"noname/SKILL.md:name-missing",
		"unterminated/SKILL.md:frontmatter-unterminated",
		"warn/SKILL.md:unknown-field",
	}
	if got := diagRules(c); !slices.Equal(got, want) {
		t.Errorf("diagnostics\n got %v\nwant %v", got, want)
	}
	for _, d := range c.Diagnostics() {
		if d.Rule == skill.RuleUnknownField {
			if d.Severity != skill.Warning || d.Line != 4 {
				t.Errorf("warning %+v", d)
			}
			continue
		}
		if d.Severity != skill.Error || !errors.Is(d.Err, ErrInvalidSkill) || d.Message == "" {
			t.Errorf("diagnostic %+v", d)
		}
	}
	if w := c.Skill("skill://warn/SKILL.md"); len(w.Findings) != 1 {
		t.Errorf("warnings are kept on the skill: %v", w.Findings)
	}
	if st := c.Stats(); st.Skills != 2 || st.Invalid != 7 {
		t.Errorf("stats %+v", st)
	}
}

func TestLimits(t *testing.T) {
	files := map[string]string{"small/SKILL.md": md("small", "d"), "many/SKILL.md": md("many", "d"), "big/SKILL.md": md("big", "d"), "edge/SKILL.md": md("edge", "d")}
	for i := range 512 {
		files[fmt.Sprintf("many/f%03d.txt", i)] = "x" // 513 with SKILL.md
	}
	for i := range 511 {
		files[fmt.Sprintf("edge/f%03d.txt", i)] = "x" // exactly 512
	}
	m := mapFS(files)
	m["big/blob.bin"] = &fstest.MapFile{Data: make([]byte, DefaultMaxBytes+1-len(files["big/SKILL.md"]))}
	c := open(t, m, nil)
	if got := uris(c); !slices.Equal(got, []string{"skill://edge/SKILL.md", "skill://small/SKILL.md"}) {
		t.Errorf("published %v", got)
	}
	var sentinels []error
	for _, d := range c.Diagnostics() {
		sentinels = append(sentinels, d.Err)
		if d.Rule != RuleLimit || !strings.Contains(d.Message, "limit") {
			t.Errorf("diagnostic %+v", d)
		}
	}
	if len(sentinels) != 2 || !errors.Is(sentinels[0], ErrTooLarge) || !errors.Is(sentinels[1], ErrTooManyFiles) {
		t.Errorf("diagnostics %v", c.Diagnostics())
	}

	// Exactly 16 MiB is allowed.
	m = mapFS(map[string]string{"big/SKILL.md": md("big", "d")})
	m["big/blob.bin"] = &fstest.MapFile{Data: make([]byte, DefaultMaxBytes-len(md("big", "d")))}
	if c := open(t, m, nil); len(c.Skills()) != 1 {
		t.Errorf("a skill of exactly 16 MiB must be published: %v", c.Diagnostics())
	}
}

func TestDotFiles(t *testing.T) {
	files := map[string]string{"a/SKILL.md": md("a", "d"), "a/.env": "SECRET=1", "a/.git/config": "x", "a/.DS_Store": "x", ".hidden/SKILL.md": md("hidden", "d")}
	c := open(t, mapFS(files), nil)
	if got := uris(c); !slices.Equal(got, []string{"skill://a/SKILL.md"}) || len(c.Skill("skill://a/SKILL.md").Files) != 1 {
		t.Fatalf("dot files published by default: %v", c.Skills()[0].Files)
	}
	c = open(t, mapFS(files), &Options{IncludeDotFiles: true})
	if n := len(c.Skill("skill://a/SKILL.md").Files); n != 4 {
		t.Errorf("with IncludeDotFiles, %d files, want 4", n)
	}
}

func TestAmbiguousEntryFile(t *testing.T) {
	c := open(t, mapFS(map[string]string{"a/SKILL.md": md("a", "d"), "a/skill.md": md("a", "d"), "b/skill.md": md("b", "d")}), nil)
	if len(c.Skills()) != 0 {
		t.Errorf("published %v", uris(c))
	}
	got := diagRules(c)
	if !slices.Equal(got, []string{"a:entry-file", "b:entry-file"}) {
		t.Errorf("diagnostics %v", got)
	}
}

func TestRootSkill(t *testing.T) {
	files := map[string]string{"SKILL.md": md("solo", "d"), "ref.md": "r"}
	c := open(t, mapFS(files), nil)
	if !slices.Equal(uris(c), []string{"skill://solo/SKILL.md"}) || len(diagRules(c)) != 0 {
		t.Errorf("root SKILL.md without prefix is published under its name: %v %v", uris(c), diagRules(c))
	}
	c = open(t, mapFS(files), &Options{Prefix: "solo"})
	if got := uris(c); !slices.Equal(got, []string{"skill://solo/SKILL.md"}) || c.File("skill://solo/ref.md") == nil {
		t.Errorf("with prefix: %v", got)
	}
	// OpenDir on a skill directory names the skill after the directory.
	parent := t.TempDir()
	dir := filepath.Join(parent, "solo")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md("solo", "d")), 0o644)
	c2, err := OpenDir(dir, &Options{Logger: quiet})
	if err != nil || !slices.Equal(uris(c2), []string{"skill://solo/SKILL.md"}) {
		t.Errorf("OpenDir on a skill directory: %v %v %v", uris(c2), diagRules(c2), err)
	}
}

func TestFileNamesInURIs(t *testing.T) {
	files := map[string]string{"a/SKILL.md": md("a", "d"), "a/My Guide.md": "g", "a/naïve.txt": "n", "a/100%.txt": "p"}
	c := open(t, mapFS(files), nil)
	for _, uri := range []string{"skill://a/My%20Guide.md", "skill://a/na%C3%AFve.txt", "skill://a/100%25.txt"} {
		if c.File(uri) == nil {
			t.Errorf("%s not published; files: %v", uri, c.Skill("skill://a/SKILL.md").Files)
		}
	}
	c = open(t, mapFS(map[string]string{"b/SKILL.md": md("b", "d"), "b/x\\y.md": "x", "ok/SKILL.md": md("ok", "d")}), nil)
	if got := uris(c); !slices.Equal(got, []string{"skill://ok/SKILL.md"}) {
		t.Errorf("a backslash in a file name must keep the skill out: %v", got)
	}
	if got := diagRules(c); !slices.Equal(got, []string{"b/x\\y.md:path"}) {
		t.Errorf("diagnostics %v", got)
	}
}

func TestSymlinks(t *testing.T) {
	outside := t.TempDir()
	canary := filepath.Join(outside, "canary.txt")
	os.WriteFile(canary, []byte("CANARY"), 0o644)
	dir := skilltest.WriteTree(t, map[string]string{
		"leak/SKILL.md":     md("leak", "d"),
		"abs/SKILL.md":      md("abs", "d"),
		"inside/SKILL.md":   md("inside", "d"),
		"inside/real.md":    "real",
		"loop/SKILL.md":     md("loop", "d"),
		"dangling/SKILL.md": md("dangling", "d"),
		"shared/common.md":  "common",
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("../../"+filepath.Base(outside)+"/canary.txt", filepath.Join(dir, "leak", "id_rsa")))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "abs", "passwd")))
	must(os.Symlink("real.md", filepath.Join(dir, "inside", "alias.md")))
	must(os.Symlink("../shared", filepath.Join(dir, "inside", "shared")))
	must(os.Symlink("..", filepath.Join(dir, "loop", "up")))
	must(os.Symlink("nowhere.md", filepath.Join(dir, "dangling", "gone.md")))

	for name, c := range map[string]*Catalog{
		"OpenDir": func() *Catalog { c, err := OpenDir(dir, &Options{Logger: quiet}); must(err); return c }(),
		"DirFS":   open(t, os.DirFS(dir), nil),
	} {
		t.Run(name, func(t *testing.T) {
			if got := uris(c); !slices.Equal(got, []string{"skill://inside/SKILL.md"}) {
				t.Errorf("published %v; diagnostics %v", got, diagRules(c))
			}
			in := c.Skill("skill://inside/SKILL.md")
			if in == nil {
				return
			}
			alias := c.File("skill://inside/alias.md")
			if alias == nil || alias.Digest != digest("real") {
				t.Errorf("a symlink inside the root is followed: %+v", alias)
			}
			if f := c.File("skill://inside/shared/common.md"); f == nil {
				t.Errorf("a directory symlink inside the root is followed once")
			}
			var escapes, loops int
			for _, d := range c.Diagnostics() {
				switch {
				case errors.Is(d.Err, ErrSymlinkEscape):
					escapes++
				case errors.Is(d.Err, ErrSymlinkLoop):
					loops++
				}
				if strings.Contains(d.Message, "CANARY") {
					t.Errorf("a diagnostic shows outside content: %s", d.Message)
				}
			}
			if escapes < 3 || loops < 1 {
				t.Errorf("want escape diagnostics for leak, abs and dangling and a loop diagnostic; got %v", diagRules(c))
			}
			for _, f := range c.files {
				data, err := c.ReadFile(f)
				if err == nil && bytes.Contains(data, []byte("CANARY")) {
					t.Errorf("%s serves the canary", f.URI)
				}
			}
		})
	}
}

// faultFS wraps an fs.FS and injects errors and changing content.
type faultFS struct {
	fstest.MapFS
	deny    map[string]bool // Open fails with permission denied
	denyDir map[string]bool // ReadDir fails with permission denied
	grow    map[string]int  // the file grows by one byte on each of its first N opens

	mu    sync.Mutex // the catalog opens files from several goroutines
	opens map[string]int
}

func (f *faultFS) Open(name string) (fs.File, error) {
	if f.deny[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	if n, ok := f.grow[name]; ok {
		f.mu.Lock()
		if f.opens == nil {
			f.opens = map[string]int{}
		}
		f.opens[name]++
		count := f.opens[name]
		f.mu.Unlock()
		if count <= n {
			// Content longer than the size the walk saw: a writer is appending.
			mf := *f.MapFS[name]
			mf.Data = append(bytes.Clone(mf.Data), 'x')
			mf.ModTime = mf.ModTime.Add(time.Duration(count) * time.Second)
			tmp := fstest.MapFS{name: &mf}
			return tmp.Open(name)
		}
	}
	return f.MapFS.Open(name)
}

func (f *faultFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if f.denyDir[name] {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrPermission}
	}
	return f.MapFS.ReadDir(name)
}

func TestUnreadableAndUnstableFiles(t *testing.T) {
	base := mapFS(map[string]string{
		"ok/SKILL.md":       md("ok", "d"),
		"locked/SKILL.md":   md("locked", "d"),
		"locked/secret.md":  "s",
		"lockdir/SKILL.md":  md("lockdir", "d"),
		"lockdir/sub/x.md":  "x",
		"flaky/SKILL.md":    md("flaky", "d"),
		"flaky/log.txt":     "log",
		"churning/SKILL.md": md("churning", "d"),
		"churning/log.txt":  "log",
	})
	f := &faultFS{MapFS: base,
		deny:    map[string]bool{"locked/secret.md": true},
		denyDir: map[string]bool{"lockdir/sub": true},
		grow:    map[string]int{"flaky/log.txt": 1, "churning/log.txt": 1000},
	}
	c := open(t, f, nil)
	if got := uris(c); !slices.Equal(got, []string{"skill://flaky/SKILL.md", "skill://ok/SKILL.md"}) {
		t.Errorf("published %v; %v", got, c.Diagnostics())
	}
	// The file that changed once was re-read: its published digest matches what it holds now.
	if fl := c.File("skill://flaky/log.txt"); fl == nil || fl.Digest != digest("log") {
		t.Errorf("flaky file %+v", fl)
	}
	want := map[string]error{"churning/log.txt": ErrUnstable, "locked/secret.md": ErrUnreadable, "lockdir/sub": ErrUnreadable}
	for _, d := range c.Diagnostics() {
		if w := want[d.Path]; w == nil || !errors.Is(d.Err, w) || d.Severity != skill.Error {
			t.Errorf("unexpected diagnostic %+v", d)
		}
		delete(want, d.Path)
	}
	if len(want) != 0 {
		t.Errorf("missing diagnostics for %v", want)
	}
}

func TestReadFileDetectsChangeAndReloadRehashes(t *testing.T) {
	dir := skilltest.WriteTree(t, map[string]string{"a/SKILL.md": md("a", "d"), "a/ref.md": "one", "b/SKILL.md": md("b", "d"), "b/big.bin": "0123456789"})
	c, err := OpenDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ref := c.File("skill://a/ref.md")
	// Same size, same modification time: only the content differs.
	p := filepath.Join(dir, "a", "ref.md")
	fi, _ := os.Stat(p)
	os.WriteFile(p, []byte("two"), 0o644)
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	if _, err := c.ReadFile(ref); !errors.Is(err, ErrChanged) {
		t.Fatalf("ReadFile after a change: %v, want ErrChanged", err)
	}
	c2, err := c.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.File("skill://a/ref.md"); got.Digest != digest("two") {
		t.Errorf("after Reload, digest %s, want the new content's", got.Digest)
	}
	if c2.ID() == c.ID() {
		t.Error("catalog ID unchanged after content change")
	}
	if data, err := c2.ReadFile(c2.File("skill://a/ref.md")); err != nil || string(data) != "two" {
		t.Errorf("ReadFile on the new snapshot: %q %v", data, err)
	}
	// A deleted file.
	os.Remove(filepath.Join(dir, "b", "big.bin"))
	if _, err := c2.ReadFile(c2.File("skill://b/big.bin")); !errors.Is(err, ErrChanged) {
		t.Errorf("ReadFile of a deleted file: %v", err)
	}
	if _, err := c2.ReadFile(&File{URI: "skill://a/ref.md"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadFile of a foreign *File: %v", err)
	}
}

func TestReloadReusesDigests(t *testing.T) {
	dir := skilltest.WriteTree(t, tree)
	c, err := OpenDir(dir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := c.Reload()
	if err != nil {
		t.Fatal(err)
	}
	st := c2.Stats()
	if st.Reused == 0 || st.Hashed > st.Skills {
		t.Errorf("reload of an unchanged tree hashed %d files and reused %d", st.Hashed, st.Reused)
	}
	if c2.ID() != c.ID() {
		t.Error("unchanged tree, different ID")
	}
	// A file replaced by rename has a new inode: its digest is recomputed.
	tmp := filepath.Join(dir, "pdf", "references", "tmp")
	os.WriteFile(tmp, []byte("# Forms\n"), 0o644)
	os.Rename(tmp, filepath.Join(dir, "pdf", "references", "FORMS.md"))
	c3, _ := c2.Reload()
	if c3.Stats().Hashed <= c2.Stats().Hashed {
		t.Errorf("a replaced file was not re-hashed: %+v", c3.Stats())
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := OpenDir(filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Error("OpenDir of a missing directory succeeded")
	}
	if _, err := Open(nil, nil); err == nil {
		t.Error("Open(nil) succeeded")
	}
	c := open(t, fstest.MapFS{}, nil)
	if len(c.Skills()) != 0 || c.ID() == "" {
		t.Errorf("empty tree: %v %q", uris(c), c.ID())
	}
}

func TestFilter(t *testing.T) {
	c := open(t, mapFS(tree), &Options{Filter: func(p string, fm skill.Frontmatter) bool { return !strings.HasPrefix(p, "acme") }})
	if got := uris(c); !slices.Equal(got, []string{"skill://pdf/SKILL.md", "skill://pdf/forms/SKILL.md"}) {
		t.Errorf("filtered %v", got)
	}
}

// FuzzPathMapping checks that any file name either keeps its skill out of
// the catalog with a diagnostic, or is published under a URI that is unique,
// stays inside the skill root and decodes back to the name.
func FuzzPathMapping(f *testing.F) {
	for _, s := range []string{"a.md", "My Guide.md", "100%.txt", "..", "a\\b", "é", "x?y#z", "%2e%2e", "a\x00b", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || strings.Contains(name, "/") || name == "." || name == ".." || !fs.ValidPath(name) {
			return
		}
		m := mapFS(map[string]string{"s/SKILL.md": md("s", "d"), "s/" + name: "content"})
		c := open(t, m, &Options{IncludeDotFiles: true})
		s := c.Skill("skill://s/SKILL.md")
		if s == nil {
			if len(c.Diagnostics()) == 0 {
				t.Fatalf("skill left out without a diagnostic for %q", name)
			}
			return
		}
		seen := map[string]bool{}
		for _, file := range s.Files {
			if seen[file.URI] || !strings.HasPrefix(file.URI, "skill://s/") {
				t.Fatalf("bad URI %q", file.URI)
			}
			seen[file.URI] = true
			rest := strings.TrimPrefix(file.URI, "skill://s/")
			if strings.ContainsAny(rest, "/?#\\ \x00") {
				t.Fatalf("URI %q has a raw separator", file.URI)
			}
		}
		if name != "SKILL.md" && len(s.Files) != 2 {
			t.Fatalf("file %q not published: %v", name, s.Files)
		}

		// The same name as folders above skills: the first becomes a
		// reg-name, deeper ones path segments; a folder "X" beside "x"
		// either maps apart or both are refused.
		other := strings.ToUpper(name)
		files := map[string]string{name + "/x/SKILL.md": md("x", "d"), "p/" + name + "/y/SKILL.md": md("y", "d")}
		if other != name && fs.ValidPath(other) {
			files[other+"/x/SKILL.md"] = md("x", "d")
		}
		c = open(t, mapFS(files), &Options{IncludeDotFiles: true})
		st := c.Stats()
		if st.Skills+st.Invalid+st.Skipped != st.Found || st.Found != len(files) {
			t.Fatalf("counts %+v for %d skills", st, len(files))
		}
		for _, s := range c.Skills() {
			authority, rest, _ := strings.Cut(strings.TrimPrefix(s.URI, "skill://"), "/")
			for i := 0; i < len(authority); i++ {
				ch := authority[i]
				if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || strings.IndexByte("-._~", ch) >= 0) {
					t.Fatalf("authority of %q is not a lowercase reg-name", s.URI)
				}
			}
			if strings.ContainsAny(rest, "?#\\ \x00") || strings.Contains(rest, "//") {
				t.Fatalf("URI %q has a raw separator", s.URI)
			}
		}
		if len(c.Skills())+st.Invalid != len(files) {
			t.Fatalf("published %v, refused %d of %d", uris(c), st.Invalid, len(files))
		}
	})
}
