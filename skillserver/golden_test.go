package skillserver_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

var idRE = regexp.MustCompile(`"id":\d+`)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden pins the exact wire JSON served for the example skills.
func TestGolden(t *testing.T) {
	cat, err := catalog.OpenDir(examples, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := skillserver.New(nil, published.NewCatalogSource(cat), &skillserver.Options{TTL: 5 * time.Minute, Logger: discard,
		// The SEP-2640 wire as the extension defines it; the compatibility
		// profiles have their own goldens (profile_golden_test.go).
		Profiles: []skillserver.Profile{skillserver.ProfileSEP2640}})
	if err != nil {
		t.Fatal(err)
	}
	c := connectRaw(t, s, "2025-11-25")
	cases := []struct {
		name, method string
		params       map[string]any
	}{
		{"skills-list", "skills/list", map[string]any{}},
		{"skills-get-pdf-processing", "skills/get", map[string]any{"uri": "skill://pdf-processing/SKILL.md"}},
		{"skills-get-refunds", "skills/get", map[string]any{"uri": "skill://acme/billing/refunds/SKILL.md"}},
		{"skills-get-unknown", "skills/get", map[string]any{"uri": "skill://acme/billing/chargebacks/SKILL.md"}},
		{"resources-read-skill-md", "resources/read", map[string]any{"uri": "skill://git-workflow/SKILL.md"}},
		{"resources-read-png", "resources/read", map[string]any{"uri": "skill://pdf-processing/assets/logo.png"}},
		{"resources-read-directory", "resources/read", map[string]any{"uri": "skill://pdf-processing/references"}},
		{"directory-read-skill-root", "resources/directory/read", map[string]any{"uri": "skill://pdf-processing"}},
		{"directory-read-prefix", "resources/directory/read", map[string]any{"uri": "skill://acme/billing"}},
		{"directory-read-file", "resources/directory/read", map[string]any{"uri": "skill://pdf-processing/SKILL.md"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, raw := c.call(tc.method, tc.params)
			// The bytes as sent, key order included; only the request id varies.
			compact := idRE.ReplaceAll(bytes.TrimSpace(raw), []byte(`"id":1`))
			var got bytes.Buffer
			if err := json.Indent(&got, compact, "", "  "); err != nil {
				t.Fatal(err)
			}
			got.WriteByte('\n')
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./server -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s differs from %s (rerun with -update if the change is intended):\n%s", tc.method, path, got.Bytes())
			}
		})
	}
}
