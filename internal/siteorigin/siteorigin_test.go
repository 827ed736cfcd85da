package siteorigin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/signature"
	"github.com/skillport/skillport/internal/sigstoretest"
	"github.com/skillport/skillport/internal/siteorigin"
	"github.com/skillport/skillport/skillclient"
	"github.com/skillport/skillport/wire"
)

// site serves a discovery document listing the given SKILL.md files by
// name, each with its right digest unless wrong lists it.
func site(t *testing.T, skills map[string]string, wrong ...string) *host.Site {
	t.Helper()
	return signedSite(t, skills, nil, wrong...)
}

// signedSite is site with an entry's _meta signature for each name of
// bundles.
func signedSite(t *testing.T, skills map[string]string, bundles map[string][]byte, wrong ...string) *host.Site {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.WellKnownPath {
			w.Write([]byte(skills[strings.Trim(r.URL.Path, "/")]))
			return
		}
		var ents []string
		for name, body := range skills {
			sum := sha256.Sum256([]byte(body))
			d := hex.EncodeToString(sum[:])
			for _, x := range wrong {
				if x == name {
					d = strings.Repeat("0", 64)
				}
			}
			meta := ""
			if b := bundles[name]; b != nil {
				meta = fmt.Sprintf(`,"_meta":{%q:%s}`, wire.MetaSignature, b)
			}
			ents = append(ents, fmt.Sprintf(`{"name":%q,"type":"skill-md","description":"d","url":"/%s","digest":"sha256:%s"%s}`, name, name, d, meta))
		}
		fmt.Fprintf(w, `{"$schema":%q,"skills":[%s]}`, wire.IndexSchema, strings.Join(ents, ","))
	}))
	t.Cleanup(ts.Close)
	s, err := host.ReadSite(context.Background(), nil, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func list(t *testing.T, tr mcp.Transport) []string {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	if err := skillclient.Register(c); err != nil {
		t.Fatal(err)
	}
	sess, err := c.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var names []string
	for sk, err := range skillclient.New(sess, nil).List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, sk.Frontmatter.Name())
	}
	return names
}

// The skills of a site are served over MCP, to as many connections as the
// host makes; a SKILL.md the catalog refuses (its name is not the entry's)
// and a digest mismatch are warnings naming the skill, and the rest is
// served.
func TestOpen(t *testing.T) {
	s := site(t, map[string]string{
		"good":     "---\nname: good\ndescription: d\n---\n",
		"misnamed": "---\nname: other\ndescription: d\n---\n",
		"tampered": "---\nname: tampered\ndescription: d\n---\n",
	}, "tampered")
	tr, warnings, err := siteorigin.Open(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(warnings, "\n")
	if len(warnings) != 2 || !strings.Contains(all, "misnamed") || !strings.Contains(all, `"tampered"`) || !strings.Contains(all, "digest mismatch") {
		t.Errorf("warnings %q", warnings)
	}
	for range 2 {
		if got := list(t, tr); len(got) != 1 || got[0] != "good" {
			t.Errorf("listed %v, want [good]", got)
		}
	}
}

// A site none of whose skills can be read is an error, not an empty origin.
func TestOpenNothingUsable(t *testing.T) {
	s := site(t, map[string]string{"a": "---\nname: a\ndescription: d\n---\n"}, "a")
	_, warnings, err := siteorigin.Open(context.Background(), s, nil)
	if !errors.Is(err, host.ErrDiscovery) || !strings.Contains(err.Error(), "none of its 1 skills") || len(warnings) != 1 {
		t.Errorf("%v, %q", err, warnings)
	}
}

// A signed skill is served at the path its bundle's statement names,
// carrying the bundle in its entry's _meta, for the host's trust policy;
// a bundle naming another skill leaves the skill at its name.
func TestOpenSigned(t *testing.T) {
	priv, _ := sigstoretest.Key(t)
	signer, err := signature.LoadSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]string{"pdf": "---\nname: pdf\ndescription: d\n---\n", "docx": "---\nname: docx\ndescription: d\n---\n"}
	bundle := func(uri string) []byte {
		b, err := signer.Sign(&signature.Set{URI: uri, Frontmatter: json.RawMessage(`{"name":"pdf","description":"d"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	metas := map[string][]byte{"pdf": bundle("skill://acme/pdf/SKILL.md"), "docx": bundle("skill://acme/pdf/SKILL.md")}
	s := signedSite(t, body, metas)
	tr, warnings, err := siteorigin.Open(context.Background(), s, nil)
	if err != nil || len(warnings) != 0 {
		t.Fatal(err, warnings)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	skillclient.Register(c)
	sess, err := c.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	got := map[string]string{}
	for sk, err := range skillclient.New(sess, nil).List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(sk.Meta, &m)
		var b bytes.Buffer
		json.Compact(&b, metas[sk.Frontmatter.Name()])
		if !bytes.Equal(m[wire.MetaSignature], b.Bytes()) {
			t.Errorf("%s: _meta %s does not carry the bundle", sk.URI, sk.Meta)
		}
		got[sk.Frontmatter.Name()] = sk.URI
	}
	if got["pdf"] != "skill://acme/pdf/SKILL.md" || got["docx"] != "skill://docx/SKILL.md" {
		t.Errorf("served at %v", got)
	}
}
