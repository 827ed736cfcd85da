//go:build !skillport_no_index && !skillport_no_sep2076 && !skillport_no_seed001

package skillserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/skillserver"
)

// seedTime is the lastModified of seed 001's annotated example; every file
// of the profile fixture gets it, so that annotations are reproducible.
var seedTime = time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC)

// profileTree copies testdata/profiles/skills, a tree reproducing the
// seeds' example skills, to a temporary directory with fixed mtimes.
func profileTree(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "skills")
	src := filepath.Join("testdata", "profiles", "skills")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return err
		}
		return os.Chtimes(out, seedTime, seedTime)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// profileServer serves the seed fixture with the given options.
func profileServer(t testing.TB, opts skillserver.Options) (*mcp.Server, *skillserver.Server, string) {
	t.Helper()
	dir := profileTree(t)
	cat, err := catalog.OpenDir(dir, &catalog.Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Skills()) != 3 {
		t.Fatalf("the seed fixture publishes %d skills, want 3: %+v", len(cat.Skills()), cat.Diagnostics())
	}
	if opts.TTL == 0 {
		opts.TTL = 5 * time.Minute
	}
	opts.Logger = discard
	s, sk, err := skillserver.New(nil, published.NewCatalogSource(cat), &opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, sk, dir
}

var runRE = regexp.MustCompile(`skill-run://[0-9a-f]{16}/`)

// seedCase is one message shape of a seed's examples.
type seedCase struct {
	name   string
	method string
	params any
	// seed is the seed's example (the result, or the error object) in
	// testdata/profiles/seed/.
	seed string
	// pick selects what to compare with the seed from our result; nil
	// means the whole result.
	pick func(t *testing.T, res map[string]any) any
	// deviations are the JSON pointers (into the seed example) where our
	// response must differ, and why. Every one must actually differ.
	deviations map[string]string
}

// TestSeedGoldens reproduces every JSON example of seeds 000 (SEP-2076) and
// 001 (skills/read) field by field against a catalog holding the seeds'
// example skills, and pins our exact responses in golden files.
func TestSeedGoldens(t *testing.T) {
	s, _, _ := profileServer(t, skillserver.Options{Scripts: newRunner(t)})
	c := connectRaw(t, s, "2025-11-25")

	var init map[string]any
	if err := json.Unmarshal(c.init, &init); err != nil {
		t.Fatal(err)
	}
	caps := func(*testing.T, map[string]any) any {
		return map[string]any{"skills": init["capabilities"].(map[string]any)["skills"]}
	}
	onlyNamed := func(names ...string) func(*testing.T, map[string]any) any {
		return func(t *testing.T, res map[string]any) any {
			out := map[string]any{}
			for k, v := range res {
				out[k] = v
			}
			var kept []any
			for _, e := range res["skills"].([]any) {
				for _, n := range names {
					if e.(map[string]any)["name"] == n {
						kept = append(kept, e)
					}
				}
			}
			if len(kept) != len(names) {
				t.Fatalf("skills/list lacks one of %v: %v", names, res["skills"])
			}
			out["skills"] = kept
			return out
		}
	}
	cases := []seedCase{
		{name: "000-capabilities", seed: "000-capabilities.json", pick: caps},
		{name: "001-capabilities", seed: "001-capabilities.json", pick: caps},
		{
			name: "000-skills-list", method: "skills/list", params: map[string]any{}, seed: "000-skills-list.json",
			pick: onlyNamed("pdf-form-filling"),
		},
		{
			name: "000-skills-get", method: "skills/get", seed: "000-skills-get.json",
			params: map[string]any{"name": "pdf-form-filling", "arguments": map[string]any{"document_type": "tax"}},
			deviations: map[string]string{
				"/dependencies/tools":  "the seed's get example adds ocr_pdf to the list example's tools; both come from the one frontmatter here, so get and list agree",
				"/files/0/name":        "SKILL.md gives files no names: name is the path relative to the skill root (forms.md)",
				"/files/0/title":       "SKILL.md gives files no titles",
				"/files/0/description": "SKILL.md gives files no descriptions",
				"/files/0/uri":         "files[].uri is the file's stable skill:// URI (the one skills/list and resources/read use), not a file:// path",
			},
		},
		{
			name: "001-skills-list", method: "skills/list", params: map[string]any{}, seed: "001-skills-list.json",
			pick: onlyNamed("create-presentation", "supabase-database"),
			deviations: map[string]string{
				"/nextCursor": "the fixture fits on one page, so there is no next page",
			},
		},
		{
			name: "001-skills-read", method: "skills/read", params: map[string]any{"name": "create-presentation"}, seed: "001-skills-read.json",
			deviations: map[string]string{
				"/skill/description":              "the seed's read example shortens the description its list example gives; the fixture's SKILL.md carries the full one, served by both",
				"/skill/scripts/0/description":    "SKILL.md gives scripts no descriptions: description is \"\"",
				"/skill/references/0/description": "SKILL.md gives references no descriptions: description is \"\"",
			},
		},
		{
			name: "001-skills-read-annotations", method: "skills/read", params: map[string]any{"name": "supabase-database"}, seed: "001-skills-read-annotations.json",
			deviations: map[string]string{
				"/skill/description":          "the seed's annotated example shortens the description of its list example",
				"/skill/annotations/priority": "priority is the server's fixed 0.8 for skill instructions (as for a SKILL.md in resources/list); SKILL.md has no priority field",
			},
		},
		{
			// The seed's request names "slide-templates", a name nothing in
			// its own example skill carries; references resolve by path,
			// file name, or file name without extension.
			name: "001-skills-read_reference", method: "skills/read_reference",
			params: map[string]any{"name": "create-presentation", "reference": "templates"}, seed: "001-skills-read_reference.json",
		},
		{
			name: "001-skills-execute", method: "skills/execute", seed: "001-skills-execute.json",
			params: map[string]any{"name": "create-presentation", "script": "create_pptx", "arguments": map[string]any{
				"title": "Q4 Sales Review",
				"slides": []any{
					map[string]any{"type": "title", "title": "Q4 Sales Review", "subtitle": "January 2026"},
					map[string]any{"type": "content", "heading": "Key Metrics", "bullets": []any{"Revenue: $4.2M", "Growth: 23%"}},
				},
			}},
			deviations: map[string]string{
				"/content/0/resource/uri": "outputs are named skill-run://<run id>/<path>, never a file: URI or a host path; the bytes travel in blob",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var raw []byte
			var got map[string]any
			if tc.method == "" {
				raw = c.init
				got = init
			} else {
				res, rerr, line := c.call(tc.method, tc.params)
				raw = line
				if rerr != nil {
					t.Fatalf("%s: error %d %s", tc.method, rerr.Code, rerr.Message)
				}
				if err := json.Unmarshal(res, &got); err != nil {
					t.Fatal(err)
				}
			}
			checkGolden(t, tc.name, raw)
			var seed any
			b, err := os.ReadFile(filepath.Join("testdata", "profiles", "seed", tc.seed))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &seed); err != nil {
				t.Fatal(err)
			}
			var ours any = got
			if tc.pick != nil {
				ours = tc.pick(t, got)
			}
			compareSeed(t, seed, ours, tc.deviations)
		})
	}
}

// checkGolden compares a response line, id and run ids normalised, with
// testdata/profiles/<name>.golden.
func checkGolden(t *testing.T, name string, raw []byte) {
	t.Helper()
	compact := idRE.ReplaceAll(bytes.TrimSpace(raw), []byte(`"id":1`))
	compact = runRE.ReplaceAll(compact, []byte("skill-run://RUN/"))
	var buf bytes.Buffer
	if err := json.Indent(&buf, compact, "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", "profiles", name+".golden")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./server -run TestSeedGoldens -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("response differs from %s (rerun with -update if intended):\n%s", path, buf.Bytes())
	}
}

type absent struct{}

// compareSeed checks that every field of the seed's example is in ours
// with the same value, except at the documented deviations, each of which
// must actually differ. Fields the seed does not show are allowed: they are
// the other profiles' fields of a superset response.
func compareSeed(t *testing.T, seed, ours any, deviations map[string]string) {
	t.Helper()
	used := map[string]bool{}
	var walk func(ptr string, s, o any)
	walk = func(ptr string, s, o any) {
		if reason, ok := deviations[ptr]; ok {
			used[ptr] = true
			if reflect.DeepEqual(s, o) {
				t.Errorf("%s: documented as differing from the seed (%s), but it is equal", ptr, reason)
			}
			return
		}
		switch sv := s.(type) {
		case map[string]any:
			ov, ok := o.(map[string]any)
			if !ok {
				t.Errorf("%s: seed has an object, we have %s", ptr, describeJSON(o))
				return
			}
			keys := make([]string, 0, len(sv))
			for k := range sv {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				v, present := ov[k]
				if !present {
					walk(ptr+"/"+k, sv[k], absent{})
					continue
				}
				walk(ptr+"/"+k, sv[k], v)
			}
		case []any:
			ov, ok := o.([]any)
			if !ok || len(ov) != len(sv) {
				t.Errorf("%s: seed has %d items, we have %s", ptr, len(sv), describeJSON(o))
				return
			}
			for i := range sv {
				walk(fmt.Sprintf("%s/%d", ptr, i), sv[i], ov[i])
			}
		default:
			if !reflect.DeepEqual(s, o) {
				t.Errorf("%s: seed has %s, we have %s", ptr, describeJSON(s), describeJSON(o))
			}
		}
	}
	walk("", seed, ours)
	for p, reason := range deviations {
		if !used[p] {
			t.Errorf("deviation %s (%s) names no field of the seed example", p, reason)
		}
	}
}

func describeJSON(v any) string {
	if _, ok := v.(absent); ok {
		return "nothing"
	}
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		b = append(b[:200], "…"...)
	}
	return string(b)
}
