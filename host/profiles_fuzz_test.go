//go:build !skillport_no_legacy

package host

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/skilluri"
	"github.com/skillport/skillport/wire"
)

// The decoders of the compatibility profiles take what a server without
// the extension sends: the skill://index.json content, skills/list
// entries by name, and the skills/get {name} and skills/read results that
// become a loaded skill's held set. Seeds are the seeds' own examples,
// our server's shapes, and the files in testdata/fuzz/<Name>.

// FuzzLegacyListEntry decodes an arbitrary skills/list entry of a legacy
// server: accepted entries are named skill://<name>/SKILL.md after the
// entry's own name and marked as the legacy profile.
func FuzzLegacyListEntry(f *testing.F) {
	f.Add([]byte(`{"name":"pdf-form-filling","title":"PDF Form Filling","description":"Fill PDF forms using the server's PDF tools.","version":"1.2.0","tags":["pdf","forms"],"arguments":[{"name":"document_type","required":false}],"dependencies":{"tools":["read_pdf"]}}`))
	f.Add([]byte(`{"name":"create-presentation","description":"Create professional PowerPoint presentations."}`))
	f.Add([]byte(`{"name":"a/b","description":"d"}`))
	f.Add([]byte(`{"name":"..","description":"d"}`))
	f.Add([]byte(`{"name":"x","description":""}`))
	f.Add([]byte(`{"name":"x%2F..","description":"d"}`))
	f.Add([]byte(`{"name":7}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := decodeLegacyEntry("o", raw)
		if err != nil {
			if e != nil {
				t.Fatal("entry returned with an error")
			}
			return
		}
		checkLegacyEntry(t, e)
		var le struct{ Name, Description string }
		if json.Unmarshal(raw, &le) != nil || e.Name != le.Name || e.Description() != le.Description ||
			e.URI != "skill://"+le.Name+"/SKILL.md" || e.Path != le.Name {
			t.Fatalf("entry %q/%q does not carry the listed name %q", e.URI, e.Name, le.Name)
		}
		if e.Profile != ProfileLegacy || e.Unverified != unverifiedLegacy {
			t.Fatalf("legacy entry not marked: %q %q", e.Profile, e.Unverified)
		}
	})
}

// fuzzRoot is the skill root the held-set fuzz targets decode under.
const fuzzRoot = "skill://s"

// checkHeldSet asserts what a held set must satisfy whatever the server
// sent: within the per-skill file limit, every file named once by a valid
// URI strictly inside the skill root, derived from a listed path without
// empty or dot segments, and readable by exactly one method.
func checkHeldSet(t *testing.T, set *legacySet, sep2076 bool) {
	t.Helper()
	if set == nil {
		t.Fatal("nil set without an error")
	}
	if len(set.files) > wire.MaxResources || len(set.manifest) != len(set.files) || len(set.byURI) != len(set.files) {
		t.Fatalf("set of %d files, %d manifest entries, %d URIs", len(set.files), len(set.manifest), len(set.byURI))
	}
	for i, f := range set.files {
		if set.byURI[f.uri] != i || set.manifest[i].URI != f.uri || set.manifest[i].Size != -1 {
			t.Fatalf("file %d (%q) not indexed consistently", i, f.uri)
		}
		if _, err := skilluri.Parse(f.uri); err != nil {
			t.Fatalf("invalid URI %q held: %v", f.uri, err)
		}
		if _, ok := skilluri.Within(fuzzRoot, f.uri); !ok {
			t.Fatalf("%q held outside %s", f.uri, fuzzRoot)
		}
		if u, err := legacyPathURI(fuzzRoot, f.path); err != nil || u != f.uri {
			t.Fatalf("path %q does not name %q (%v)", f.path, f.uri, err)
		}
		if strings.HasPrefix(f.path, "/") {
			t.Fatalf("absolute path %q held", f.path)
		}
		for _, s := range strings.Split(f.path, "/") {
			if s == "" || s == "." || s == ".." {
				t.Fatalf("path %q with an empty or dot segment held", f.path)
			}
		}
		if sep2076 {
			if f.ref != "" || legacySourceURI(f.src) != nil {
				t.Fatalf("SEP-2076 file %+v: bad source", f)
			}
		} else if f.src != "" || f.ref != f.path {
			t.Fatalf("seed-001 file %+v: not read by its listed path", f)
		}
		if g := set.lookup(f.path, ""); g == nil || g.uri != f.uri {
			t.Fatalf("listed path %q does not find its file", f.path)
		}
	}
	// Nothing unlisted is found, and nothing climbing out of the skill.
	for _, ref := range []string{"../x", "../s/SKILL.md", "SKILL.md/../../x"} {
		if g := set.lookup(ref, ""); g != nil && (g.path != ref && g.src != ref) {
			t.Fatalf("%q found %+v", ref, g)
		}
		if g := set.lookup(ref, ""); g != nil && strings.Contains("/"+g.path+"/", "/../") {
			t.Fatalf("%q found a climbing path %q", ref, g.path)
		}
	}
}

// FuzzLegacyGetResult decodes an arbitrary SEP-2076 skills/get {name}
// result into instructions and a held set.
func FuzzLegacyGetResult(f *testing.F) {
	// Seed 000's example, verbatim.
	f.Add([]byte(`{"description":"Fill PDF forms using the server's PDF tools.","instructions":"Use read_pdf to inspect form fields before writing. If a form is scanned, call ocr_pdf first...","dependencies":{"tools":["read_pdf","write_pdf","ocr_pdf"],"resources":[{"type":"ref/resource","uri":"file:///skills/pdf/forms.md"}]},"files":[{"name":"forms-reference","title":"Common PDF Form Patterns","uri":"file:///skills/pdf/forms.md","description":"Examples of fillable and scanned form handling.","mimeType":"text/markdown","required":false}]}`))
	// Our server's shape.
	f.Add([]byte(`{"description":"d","instructions":"# PDF\n","files":[{"name":"references/FORMS.md","uri":"skill://pdf-processing/references/FORMS.md","mimeType":"text/markdown","required":false},{"name":"assets/logo.png","uri":"skill://pdf-processing/assets/logo.png","required":false}]}`))
	f.Add([]byte(`{"instructions":"x","files":[{"name":"../SKILL.md","uri":"skill://s/../x"},{"name":"a//b","uri":"skill://s/a"},{"name":"a","uri":"skill://s/a"},{"name":"a","uri":"skill://s/b"},{"name":"c\\d","uri":"x:y"},{"name":"%2e%2e","uri":"x:y"},{"name":"sp ace.md","uri":"no-scheme"},{"name":"e","uri":"a:b c"}]}`))
	f.Add([]byte(`{"instructions":"x","files":"all"}`))
	f.Add([]byte(`{"instructions":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var gr getResult
		if json.Unmarshal(raw, &gr) != nil {
			return
		}
		body, set, notes, err := decodeLegacyGet(fuzzRoot, &gr)
		if err != nil {
			if set != nil || body != "" || notes != nil {
				t.Fatalf("error %v with a result", err)
			}
			return
		}
		if gr.Instructions == nil || body != *gr.Instructions || int64(len(body)) > wire.MaxTotalBytes {
			t.Fatalf("body of %d bytes accepted", len(body))
		}
		checkHeldSet(t, set, true)
	})
}

// FuzzReadResult decodes an arbitrary seed-001 skills/read result into
// instructions and a held set read through skills/read_reference.
func FuzzReadResult(f *testing.F) {
	// Seed 001's example, verbatim.
	f.Add([]byte(`{"skill":{"name":"s","description":"Create professional PowerPoint presentations with proper formatting and structure.","instructions":"# Presentation Creator\n\nRun ` + "`scripts/create_pptx.py`" + ` to generate the final PPTX file.","scripts":[{"name":"create_pptx.py","description":"Create a new PowerPoint file with specified slides","path":"scripts/create_pptx.py"}],"references":[{"name":"templates.md","description":"Available slide layout templates","path":"references/templates.md"}],"metadata":{"author":"example-org","version":"1.0","license":"Apache-2.0"}}}`))
	f.Add([]byte(`{"skill":{"name":"s","description":"d","instructions":"x","scripts":[],"references":[{"name":"a","path":"references/a.md"},{"name":"a","path":"references/a.md"}],"assets":[{"name":"logo.png","path":"assets/logo.png"}],"annotations":{"audience":["assistant"],"priority":0.8}}}`))
	f.Add([]byte(`{"skill":{"name":"other","instructions":"x"}}`))
	f.Add([]byte(`{"skill":{"name":"s","instructions":"x","references":[{"path":"../../etc/passwd"},{"path":"/abs"},{"path":"./a"},{"path":""},{"path":7}],"scripts":{"path":"x"},"assets":[null]}}`))
	f.Add([]byte(`{"skill":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var rr readResult
		if json.Unmarshal(raw, &rr) != nil {
			return
		}
		body, set, notes, err := decodeLegacyRead("s", fuzzRoot, &rr)
		if err != nil {
			if set != nil || body != "" || notes != nil {
				t.Fatalf("error %v with a result", err)
			}
			return
		}
		if rr.Skill == nil || rr.Skill.Instructions == nil || body != *rr.Skill.Instructions || int64(len(body)) > wire.MaxTotalBytes {
			t.Fatalf("body of %d bytes accepted", len(body))
		}
		if rr.Skill.Name != "" && rr.Skill.Name != "s" {
			t.Fatalf("result for skill %q accepted for s", rr.Skill.Name)
		}
		checkHeldSet(t, set, false)
	})
}

// FuzzReadReferenceResult decodes an arbitrary skills/read_reference
// result: either an error, or exactly the text or the blob sent.
func FuzzReadReferenceResult(f *testing.F) {
	f.Add([]byte(`{"content":{"uri":"skill://create-presentation/references/templates.md","mimeType":"text/markdown","text":"# Slide Templates\n"}}`))
	f.Add([]byte(`{"content":{"uri":"skill://s/assets/logo.png","mimeType":"image/png","blob":"iVBORw0KGgo="}}`))
	f.Add([]byte(`{"content":{"uri":"skill://s/x","text":"a","blob":"AA=="}}`))
	f.Add([]byte(`{"content":{"uri":"skill://s/x"}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var res referenceResult
		if json.Unmarshal(raw, &res) != nil {
			return
		}
		data, mime, err := referenceData(&res)
		if err != nil {
			if data != nil {
				t.Fatal("data with an error")
			}
			return
		}
		c := res.Content
		if data == nil || mime != c.MIMEType {
			t.Fatalf("data %v, mime %q", data, mime)
		}
		switch {
		case c.Text != nil:
			if len(c.Blob) > 0 || string(data) != *c.Text {
				t.Fatal("text result is not the text sent")
			}
		case string(data) != string(c.Blob):
			t.Fatal("blob result is not the blob sent")
		}
	})
}

// TestProfileDecoderExamples pins what the decoders make of the seeds'
// examples and of the cases the fuzz targets start from.
func TestProfileDecoderExamples(t *testing.T) {
	gr := &getResult{}
	json.Unmarshal([]byte(`{"instructions":"Use read_pdf.","files":[{"name":"forms-reference","title":"Common PDF Form Patterns","uri":"file:///skills/pdf/forms.md","mimeType":"text/markdown","required":false}]}`), gr)
	body, set, notes, err := decodeLegacyGet("skill://pdf-form-filling", gr)
	if err != nil || body != "Use read_pdf." || len(notes) != 0 || len(set.files) != 1 {
		t.Fatalf("seed 000 example: %q %+v %v %v", body, set, notes, err)
	}
	if f := set.files[0]; f.uri != "skill://pdf-form-filling/forms-reference" || f.src != "file:///skills/pdf/forms.md" || f.mime != "text/markdown" {
		t.Errorf("seed 000 file: %+v", f)
	}

	var rr readResult
	json.Unmarshal([]byte(`{"skill":{"name":"create-presentation","instructions":"x","scripts":[{"name":"create_pptx.py","description":"d","path":"scripts/create_pptx.py"}],"references":[{"name":"templates.md","description":"d","path":"references/templates.md"}]}}`), &rr)
	_, set, notes, err = decodeLegacyRead("create-presentation", "skill://create-presentation", &rr)
	if err != nil || len(notes) != 0 || len(set.files) != 2 || set.files[0].ref != "references/templates.md" || set.files[1].uri != "skill://create-presentation/scripts/create_pptx.py" {
		t.Fatalf("seed 001 example: %+v %v %v", set, notes, err)
	}

	var files []string
	for i := range wire.MaxResources + 8 {
		files = append(files, `{"name":"f`+strconv.Itoa(i)+`","uri":"skill://s/f`+strconv.Itoa(i)+`"}`)
	}
	gr = &getResult{}
	json.Unmarshal([]byte(`{"instructions":"x","files":[`+strings.Join(files, ",")+`]}`), gr)
	if _, set, notes, _ := decodeLegacyGet(fuzzRoot, gr); len(set.files) != wire.MaxResources || len(notes) != 8 {
		t.Errorf("%d files held, %d notes; want the first %d and a note for each other", len(set.files), len(notes), wire.MaxResources)
	}
	big := strings.Repeat("x", wire.MaxTotalBytes+1)
	if _, _, _, err := decodeLegacyGet(fuzzRoot, &getResult{Instructions: &big}); !errors.Is(err, ErrDeclined) {
		t.Errorf("instructions over 16 MiB: %v", err)
	}
}
