package gateway_test

import (
	"context"
	"path"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
)

// The gateway re-publishes files with the media types a catalog gives the
// same names: one table, including the extensions its former copy got
// wrong (.cjs, .htm, .tsv).
func TestRepublishedMIMETypesMatchTheCatalog(t *testing.T) {
	f := newFake()
	f.add("web", "Web bits.", "Body.", map[string]string{"lib/x.cjs": "module.exports = 1\n", "page.htm": "<p>hi</p>\n", "data.tsv": "a\tb\n"})
	g := newGateway(t, []host.Origin{f.origin(t, "up")}, nil, nil)
	<-g.Ready()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	seen := 0
	for r, err := range cs.Resources(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		switch path.Ext(r.URI) {
		case ".cjs", ".htm", ".tsv":
			seen++
			if want := catalog.MIMEType(r.URI, true); r.MIMEType != want {
				t.Errorf("%s: %s, a catalog says %s", r.URI, r.MIMEType, want)
			}
		}
	}
	if seen != 3 {
		t.Fatalf("%d of the 3 files re-published", seen)
	}
}
