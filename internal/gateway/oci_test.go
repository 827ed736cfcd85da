package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/gateway"
	"github.com/skillport/skillport/internal/ocisource"
	"github.com/skillport/skillport/internal/ocitest"
)

// TestGatewayConfigOCISource: a gateway.json skillDirs path of oci://…
// is read from a real registry (docker-registry on loopback) and its
// skills are the gateway's.
func TestGatewayConfigOCISource(t *testing.T) {
	reg := ocitest.Start(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	cat, err := catalog.OpenDir("../../examples/skills", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ref, err := ocisource.ParseRef("oci://" + reg.Host + "/acme/skills:v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ocisource.Push(context.Background(), cat, ref, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := gateway.ParseConfig("gateway.json", []byte(`{"skillDirs": [{"label": "team", "path": "`+ref.String()+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Open(cfg, &gateway.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	g.Start(context.Background())
	<-g.Ready()
	var names []string
	for _, e := range g.Host().Skills() {
		names = append(names, e.Qualified)
	}
	if len(names) != 5 || !strings.Contains(" "+strings.Join(names, " ")+" ", " pdf-processing ") {
		t.Errorf("the gateway's skills from %s: %v", ref, names)
	}
}
