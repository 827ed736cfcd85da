package web_test

import (
	"encoding/json"
	"testing"
	"testing/fstest"

	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/sigfile"
	"github.com/skillport/skillport/internal/signature"
	"github.com/skillport/skillport/internal/sigstoretest"
	"github.com/skillport/skillport/internal/web"
	"github.com/skillport/skillport/wire"
)

// TestSignatureShownAndCarried: the discovery document carries a signed
// skill's bundle under _meta as skills/list does, and the skill page names
// the signer; a bundle holding an escaped NUL does not move the entry's url.
func TestSignatureShownAndCarried(t *testing.T) {
	priv, _ := sigstoretest.Key(t)
	signer, err := signature.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{
		"pdf/SKILL.md":  skillMD("pdf", "Read PDFs.", "# PDF\n"),
		"evil/SKILL.md": skillMD("evil", "Odd bundle.", "# Evil\n"),
	}
	sk := openCatalog(t, fsys).Skill("skill://pdf/SKILL.md")
	set := &signature.Set{URI: sk.URI, Frontmatter: sk.Frontmatter.JSON()}
	for _, f := range sk.Files {
		set.Resources = append(set.Resources, signature.Resource{URI: f.URI, Digest: f.Digest, Size: f.Size})
	}
	bundle, err := signer.Sign(set)
	if err != nil {
		t.Fatal(err)
	}
	fsys[sigfile.Path("pdf")] = &fstest.MapFile{Data: bundle}
	fsys[sigfile.Path("evil")] = &fstest.MapFile{Data: []byte(`{"x":"\u0000 /raw/elsewhere","url":"\u0000"}`)}
	ts := serveWeb(t, published.NewCatalogSource(openCatalog(t, fsys)), nil)

	_, body := get(t, ts.URL+web.WellKnownPath)
	var doc struct {
		Skills []struct {
			Name string                     `json:"name"`
			URL  string                     `json:"url"`
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"skills"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("discovery document: %v\n%s", err, body)
	}
	for _, s := range doc.Skills {
		if s.URL != ts.URL+"/raw/"+s.Name+"/SKILL.md" {
			t.Errorf("%s: url %s", s.Name, s.URL)
		}
		if len(s.Meta[wire.MetaSignature]) == 0 {
			t.Errorf("%s: no signature carried: %s", s.Name, body)
		}
	}
	if len(doc.Skills) != 2 {
		t.Errorf("%d skills: %s", len(doc.Skills), body)
	}
	_, page := get(t, ts.URL+"/s/pdf/")
	mustContain(t, "signed skill page", page, "signed by key "+signer.KeyID()[:16])
	_, page = get(t, ts.URL+"/s/evil/")
	mustContain(t, "odd bundle page", page, "a signature that does not match this skill")
}
