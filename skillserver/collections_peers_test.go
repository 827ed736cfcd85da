package skillserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/peers"
)

// collectionDir copies the catalog's fixture of real-world collection
// shapes (nested metadata, allowed-tools lists, renamed folders,
// mixed-case and punctuated prefix folders, surrogate-pair escapes, BOM
// and CRLF, and skills that are refused) to a temporary directory.
func collectionDir(t *testing.T) (string, *catalog.Catalog) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "collections")
	if err := os.CopyFS(dir, os.DirFS("../catalog/testdata/collections")); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Skills()) < 15 {
		t.Fatalf("the collection fixture publishes %d skills, want at least 15", len(c.Skills()))
	}
	return dir, c
}

// The TypeScript SDK's reference SkillsClient lists, reads and verifies
// every file of a collection published with its folders mapped to URIs
// and lenient rules.
func TestTypeScriptSkillsClientCollection(t *testing.T) {
	dir, c := collectionDir(t)
	client := peers.Script(t, "ts-skills-client.mjs")
	stateful := serveHTTP(t, dir)
	stateless := serveHTTP(t, dir, "--stateless")
	for name, target := range map[string][]string{
		"http-legacy":           {"--era", "legacy", "--url", stateful.URL},
		"http-stateless-modern": {"--era", "modern", "--url", stateless.URL},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{peers.Node(t), client, "--directories"}, target...)
			res, err := peers.Run(context.Background(), peers.Command{Args: args, Env: peers.Env(t)})
			var rep tsReport
			if jerr := json.Unmarshal(res.Stdout, &rep); jerr != nil {
				t.Fatalf("the TS client printed no JSON report (%v): %v\n%s", jerr, err, res.Stderr)
			}
			// The TS SDK refuses listing entries whose metadata is not a
			// map of strings (its own check, stricter than SEP-2640's
			// verbatim frontmatter): exactly those, and nothing else, may
			// be reported; every other skill must verify.
			refused := map[string]bool{}
			for _, s := range c.Skills() {
				if v, ok := s.Frontmatter.Get("metadata"); ok && !stringMap(v) {
					refused[s.URI] = true
				}
			}
			if len(refused) == 0 {
				t.Fatal("the fixture has no skill with non-string metadata")
			}
			for _, raw := range rep.Errors {
				var e struct{ URI, Kind, Message string }
				json.Unmarshal(raw, &e)
				if !refused[e.URI] || e.Kind != "invalid-entry" || !strings.Contains(e.Message, "metadata must map strings to strings") {
					t.Errorf("TS SkillsClient error: %s", raw)
				}
			}
			if len(rep.Errors) != len(refused) {
				t.Errorf("TS SkillsClient reported %d errors, want %d (one per skill with non-string metadata): %s (%v)", len(rep.Errors), len(refused), res.Stdout, err)
			}
			rows := map[string]int{}
			for i, s := range rep.Skills {
				rows[s.URI] = i
			}
			verified := 0
			for _, want := range c.Skills() {
				if refused[want.URI] {
					continue
				}
				i, ok := rows[want.URI]
				if !ok {
					t.Errorf("TS client did not list %s", want.URI)
					continue
				}
				s := rep.Skills[i]
				if !s.Verified || s.Files != len(want.Files) {
					t.Errorf("%+v, want %s verified with %d files", s, want.URI, len(want.Files))
				}
				if n := countTree(c, want.Root); s.Directory != n {
					t.Errorf("%s: walking resources/directory/read saw %d entries, want %d", s.URI, s.Directory, n)
				}
				verified++
			}
			t.Logf("TS SkillsClient: %d skills verified, %d refused for non-string metadata", verified, len(refused))
		})
	}
}

func stringMap(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, e := range m {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return true
}

// The official conformance suite's SEP-2640 scenarios pass on a server
// publishing the collection fixture, with no flag and with --stateless.
func TestConformanceSuiteCollection(t *testing.T) {
	dir, _ := collectionDir(t)
	for _, mode := range [][]string{nil, {"--stateless"}} {
		srv := serveHTTP(t, dir, mode...)
		for _, scenario := range []string{"sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory"} {
			t.Run(fmt.Sprint(mode, scenario), func(t *testing.T) {
				checks := peers.ConformanceServer(t, srv.URL, scenario)
				if len(checks) == 0 {
					t.Fatalf("conformance %s ran no check", scenario)
				}
				for _, bad := range peers.JudgeChecks(checks, nil) {
					t.Error(bad)
				}
			})
		}
	}
}
