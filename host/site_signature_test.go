package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/sigfile"
	"github.com/skillport/skillport/wire"
)

// TestFetchSiteSignatures: an entry's bundle (its _meta, as skills/list
// carries it) is laid out where the catalog reads a source's, beside the
// skill's folder, wherever that is: the folder SkillDir names when it is
// a relative path ending in the name and overlaps no other skill, else
// the name; a nested skill's inside its container's. A bundle over the
// size limit, or not an object, gets its entry refused in one line.
func TestFetchSiteSignatures(t *testing.T) {
	arts := map[string][]byte{}
	var ents []wire.IndexEntry
	add := func(name, meta string) {
		arts["/"+name] = []byte(fmt.Sprintf(md, name))
		ents = append(ents, wire.IndexEntry{Name: name, Type: "skill-md", URL: "/" + name, Digest: sha(arts["/"+name]), Meta: json.RawMessage(meta)})
	}
	sig := func(dir string) string {
		return fmt.Sprintf(`{%q:{"dir":%q}}`, wire.MetaSignature, dir)
	}
	add("plain", sig(""))
	add("unsigned", "")
	add("other-meta", `{"io.example/x":1}`)
	add("not-object-meta", `[1]`)
	add("huge", fmt.Sprintf(`{%q:{"pad":%q}}`, wire.MetaSignature, strings.Repeat("a", sigfile.MaxBytes)))
	add("string", fmt.Sprintf(`{%q:"a bundle"}`, wire.MetaSignature))
	add("moved", sig("acme/moved"))
	add("wrong-name", sig("acme/other"))
	add("outer", sig("z/outer"))
	add("inner", sig("z/outer/inner"))
	add("escape", sig("../escape"))
	add("dotted", sig(".hidden/dotted"))
	add("reserved", sig("index.json/reserved"))
	parent := mkTarGz(t, tarEntry{Name: "SKILL.md", Body: fmt.Sprintf(md, "parent")}, tarEntry{Name: "kid/SKILL.md", Body: fmt.Sprintf(md, "kid")})
	arts["/parent"] = parent
	ents = append(ents, wire.IndexEntry{Name: "parent", Type: "archive", URL: "/parent", Digest: sha(parent), Meta: json.RawMessage(sig("acme/parent"))})
	add("kid", sig("kid"))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(arts[r.URL.Path])
	}))
	defer ts.Close()

	dirOf := func(name string, bundle []byte) string {
		var b struct{ Dir string }
		json.Unmarshal(bundle, &b)
		return b.Dir
	}
	tree, errs := host.FetchSite(context.Background(), nil, siteOf(t, ts.URL, ents...), nil, &host.SiteOptions{SkillDir: dirOf})
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	wantErrs := []string{
		fmt.Sprintf(`skill "huge": _meta "io.skillport/signature" is %d bytes, over the %d-byte limit of a signature bundle; the entry is skipped`, sigfile.MaxBytes+10, sigfile.MaxBytes),
		`skill "string": _meta "io.skillport/signature" is not a JSON object (a Sigstore bundle); the entry is skipped`,
	}
	if strings.Join(msgs, "\n") != strings.Join(wantErrs, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(wantErrs, "\n"))
	}
	for dir, signed := range map[string]bool{
		"plain": true, "unsigned": false, "other-meta": false, "not-object-meta": false,
		"acme/moved": true, "wrong-name": true, "outer": true, "inner": true,
		"escape": true, "dotted": true, "reserved": true, "acme/parent": true, "acme/parent/kid": true,
	} {
		if _, err := fs.Stat(tree, dir+"/SKILL.md"); err != nil {
			t.Errorf("%s/SKILL.md: %v", dir, err)
		}
		b, err := fs.ReadFile(tree, sigfile.Path(dir))
		if (err == nil) != signed {
			t.Errorf("%s: bundle present = %v, want %v", dir, err == nil, signed)
		}
		if signed && !json.Valid(b) {
			t.Errorf("%s: bundle %q", dir, b)
		}
	}
	for _, gone := range []string{"huge/SKILL.md", "string/SKILL.md", "kid/SKILL.md", "moved/SKILL.md", sigfile.Path("kid")} {
		if _, err := fs.Stat(tree, gone); err == nil {
			t.Errorf("%s is in the tree", gone)
		}
	}
}
