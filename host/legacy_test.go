//go:build !skillport_no_legacy

package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// loadLegacySkill connects a host to f and loads its skill "pdf".
func loadLegacySkill(t *testing.T, f *legacyFake) (*Host, *Loaded) {
	t.Helper()
	// 9 MiB reads in process take seconds on a loaded machine.
	h := connect(t, &Options{Approver: &recorder{}, AllowDynamic: true, CallTimeout: time.Minute}, Origin{Label: "old", Transport: f.transport(t)})
	if st := h.Origins()[0]; st.Profile != ProfileLegacy || st.Err != nil {
		t.Fatalf("origin %+v", st)
	}
	e, err := h.Lookup("pdf")
	if err != nil {
		t.Fatal(err)
	}
	l, err := h.Load(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	return h, l
}

// TestLegacyGetFiles: a SEP-2076 skill's files[] become the held set; each
// is read with resources/read of the listed URI on the same server, by its
// name or that URI, unverified; unusable items are left out with a note.
func TestLegacyGetFiles(t *testing.T) {
	f := sep2076Fake()
	h, l := loadLegacySkill(t, f)
	ctx := context.Background()
	for _, tc := range []struct{ ref, src, path, want string }{
		{"forms-reference", "file:///skills/pdf/forms.md", "forms-reference", "# Forms\n"},
		{"file:///skills/pdf/forms.md", "file:///skills/pdf/forms.md", "forms-reference", "# Forms\n"},
		{"guide/INTRO.md", "skill://elsewhere/pdf/guide/INTRO.md", "guide/INTRO.md", "intro"},
		{"./guide/../guide/INTRO.md", "skill://elsewhere/pdf/guide/INTRO.md", "guide/INTRO.md", "intro"},
		{"skill://pdf/guide/INTRO.md", "skill://elsewhere/pdf/guide/INTRO.md", "guide/INTRO.md", "intro"},
	} {
		before := len(f.callLog())
		file, err := l.ReadFile(ctx, tc.ref)
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		if string(file.Data) != tc.want || file.Verified || file.URI != tc.src || file.Path != tc.path {
			t.Errorf("%s: %+v", tc.ref, file)
		}
		if got := f.callLog()[before:]; len(got) != 1 || !strings.HasPrefix(got[0], "resources/read ") || !strings.Contains(got[0], tc.src) {
			t.Errorf("%s: server received %q", tc.ref, got)
		}
	}
	if file, _ := l.ReadFile(ctx, "forms-reference"); file == nil || file.MIMEType != "text/markdown" {
		t.Errorf("the listed MIME type is kept when the read reports none: %+v", file)
	}
	for _, note := range []string{`"../escape.md" cannot be a path`, `"/abs.md" cannot be a path`, "uri is empty", "space, control or non-ASCII", `"forms-reference" is listed twice`, "files[7] is not a file object", "files[8] is not a file object"} {
		if !hasDiag(h, "old", note) {
			t.Errorf("no diagnostic %q in\n%s", note, diags(h))
		}
	}
	ents, err := l.ListDir(ctx, "")
	if err != nil || len(ents) != 2 || ents[0].Name != "forms-reference" || ents[0].Dir || ents[1].Name != "guide" || !ents[1].Dir {
		t.Errorf("ListDir root = %+v, %v", ents, err)
	}
	if ents, err := l.ListDir(ctx, "guide"); err != nil || len(ents) != 1 || ents[0].Name != "INTRO.md" || ents[0].Size != -1 {
		t.Errorf("ListDir guide = %+v, %v", ents, err)
	}
	if _, err := l.ReadFile(ctx, "guide"); !errors.Is(err, ErrNotFile) {
		t.Errorf("reading a directory: %v", err)
	}
	out := RenderSkill(l)
	if !strings.Contains(out, "<file>forms-reference</file>") || !strings.Contains(out, "<file>guide/INTRO.md</file>") || strings.Contains(out, "escape") {
		t.Errorf("read_skill output lists the wrong files:\n%s", out)
	}
}

// TestLegacyRefusalsSendNothing: references outside the held set fail
// with the errors a SEP-2640 skill's do, and reach no server.
func TestLegacyRefusalsSendNothing(t *testing.T) {
	f := sep2076Fake()
	_, l := loadLegacySkill(t, f)
	ctx := context.Background()
	before := f.callLog()
	for _, tc := range []struct {
		ref    string
		reason Reason
	}{
		{"not-listed.md", ReasonUnlisted},
		{"skill://pdf/not-listed.md", ReasonUnlisted},
		{"SKILL.md", ReasonUnlisted},
		{"escape.md", ReasonUnlisted},
		{"../escape.md", ReasonOutsideRoot},
		{"../other/SKILL.md", ReasonOutsideRoot},
		{"guide/../../other/SKILL.md", ReasonOutsideRoot},
		{"/etc/passwd", ReasonOutsideRoot},
		{"file:///skills/pdf/other.md", ReasonOutsideRoot},
		{"skill://other/SKILL.md", ReasonOutsideRoot},
		{"skill://elsewhere/pdf/guide/OTHER.md", ReasonOutsideRoot},
	} {
		var nerr *NoSuchFileError
		if _, err := l.ReadFile(ctx, tc.ref); !errors.As(err, &nerr) || nerr.Reason != tc.reason {
			t.Errorf("%s: %v, want %q", tc.ref, err, tc.reason)
		}
	}
	var nerr *NoSuchFileError
	if _, err := l.ListDir(ctx, "../other"); !errors.As(err, &nerr) || !nerr.Dir || nerr.Reason != ReasonOutsideRoot {
		t.Errorf("ListDir ../other: %v", err)
	}
	if _, err := l.ListDir(ctx, "nowhere"); !errors.As(err, &nerr) || !nerr.Dir || nerr.Reason != ReasonUnlisted {
		t.Errorf("ListDir of an unlisted directory: %v", err)
	}
	if after := f.callLog(); len(after) != len(before) {
		t.Errorf("refused reads reached the server: %q", after[len(before):])
	}
	l.Close()
	if _, err := l.ReadFile(ctx, "forms-reference"); !errors.Is(err, ErrNotLoaded) {
		t.Errorf("read after Close: %v", err)
	}
}

// TestLegacyReadChecks: what a listed read returns is held to the same
// rules as a dynamic skill's: one content item for the URI, 16 MiB in all.
func TestLegacyReadChecks(t *testing.T) {
	f := sep2076Fake()
	_, l := loadLegacySkill(t, f)
	ctx := context.Background()
	f.mu.Lock()
	f.contents = func(uri string) *mcp.ReadResourceResult {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///etc/passwd", Text: "root"}}}
	}
	f.mu.Unlock()
	var verr *VerificationError
	if _, err := l.ReadFile(ctx, "forms-reference"); !errors.As(err, &verr) || verr.Reason != ReasonContents {
		t.Errorf("content for another URI: %v", err)
	}
	big := strings.Repeat("x", 9<<20)
	f.mu.Lock()
	f.contents = func(uri string) *mcp.ReadResourceResult {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: big}}}
	}
	f.mu.Unlock()
	if _, err := l.ReadFile(ctx, "forms-reference"); err != nil {
		t.Fatalf("first 9 MiB: %v", err)
	}
	if _, err := l.ReadFile(ctx, "guide/INTRO.md"); !errors.As(err, &verr) || verr.Reason != ReasonLimit {
		t.Errorf("past 16 MiB: %v, want %q", err, ReasonLimit)
	}
}

// TestLegacyReadReference: a seed-001 skill's references, scripts and
// assets become the held set, each read with skills/read_reference on the
// same server, unverified; refusals send nothing.
func TestLegacyReadReference(t *testing.T) {
	f := seed001Fake()
	h, l := loadLegacySkill(t, f)
	ctx := context.Background()
	if string(l.Document.Body) != "See references." {
		t.Fatalf("body %q", l.Document.Body)
	}
	before := len(f.callLog())
	file, err := l.ReadFile(ctx, "references/templates.md")
	if err != nil || string(file.Data) != "# Templates\n" || file.Verified || file.URI != "skill://pdf/references/templates.md" || file.MIMEType != "text/markdown" {
		t.Fatalf("templates: %+v, %v", file, err)
	}
	got := f.callLog()[before:]
	if len(got) != 1 || !strings.HasPrefix(got[0], "skills/read_reference ") || !strings.Contains(got[0], `"name":"pdf","reference":"references/templates.md"`) {
		t.Errorf("server received %q", got)
	}
	file, err = l.ReadFile(ctx, "assets/logo.png")
	if err != nil || !bytes.Equal(file.Data, []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0xff}) || file.Verified {
		t.Errorf("logo: %+v, %v", file, err)
	}
	var verr *VerificationError
	if _, err := l.ReadFile(ctx, "scripts/fill.py"); !errors.As(err, &verr) || verr.Reason != ReasonContents {
		t.Errorf("text and blob together: %v", err)
	}
	for _, note := range []string{`path "../x.md" cannot be a path`, `path "" cannot be a path`, `"references/templates.md" is listed twice`} {
		if !hasDiag(h, "old", note) {
			t.Errorf("no diagnostic %q in\n%s", note, diags(h))
		}
	}
	before = len(f.callLog())
	for _, tc := range []struct {
		ref    string
		reason Reason
	}{
		{"references/other.md", ReasonUnlisted},
		{"templates.md", ReasonUnlisted}, // the server would resolve it; the host reads only what was listed
		{"../x.md", ReasonOutsideRoot},
		{"../other/SKILL.md", ReasonOutsideRoot},
	} {
		var nerr *NoSuchFileError
		if _, err := l.ReadFile(ctx, tc.ref); !errors.As(err, &nerr) || nerr.Reason != tc.reason {
			t.Errorf("%s: %v, want %q", tc.ref, err, tc.reason)
		}
	}
	if after := f.callLog(); len(after) != before {
		t.Errorf("refused reads reached the server: %q", after[before:])
	}
	if ents, err := l.ListDir(ctx, ""); err != nil || len(ents) != 3 {
		t.Errorf("ListDir root = %+v, %v", ents, err)
	}
}

// TestLegacyReadWrongSkill: a skills/read answer naming another skill is
// not loaded.
func TestLegacyReadWrongSkill(t *testing.T) {
	f := seed001Fake()
	f.read = func(string) (json.RawMessage, error) {
		return json.RawMessage(`{"skill":{"name":"other","description":"d","instructions":"x"}}`), nil
	}
	h := connect(t, &Options{Approver: &recorder{}, AllowDynamic: true}, Origin{Label: "old", Transport: f.transport(t)})
	e, err := h.Lookup("pdf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Load(context.Background(), e); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("load: %v, want ErrInvalidEntry", err)
	}
}

// TestLegacyApprovalUnchanged: a legacy skill is declined without
// AllowDynamic, and with it asks on every load and is never remembered,
// whatever files it lists.
func TestLegacyApprovalUnchanged(t *testing.T) {
	f := sep2076Fake()
	h := connect(t, &Options{Approver: &recorder{}}, Origin{Label: "old", Transport: f.transport(t)})
	e, _ := h.Lookup("pdf")
	if _, err := h.Load(context.Background(), e); !errors.Is(err, ErrDeclined) {
		t.Errorf("load without AllowDynamic: %v", err)
	}
	rec := &recorder{}
	h = connect(t, &Options{Approver: rec, AllowDynamic: true}, Origin{Label: "old", Transport: sep2076Fake().transport(t)})
	e, _ = h.Lookup("pdf")
	for range 2 {
		if _, err := h.Load(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(rec.requests); n != 2 || !rec.requests[0].Dynamic {
		t.Errorf("%d approval requests (%+v), want 2 for dynamic loads", n, rec.requests)
	}
}

func (f *legacyFake) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func seed001Fake() *legacyFake {
	f := &legacyFake{}
	f.get = func(string) (json.RawMessage, error) { return nil, &jsonrpcError{code: -32601, msg: "not here"} }
	f.read = func(name string) (json.RawMessage, error) {
		if name != "pdf" {
			return nil, &jsonrpcError{code: -32002, msg: "Skill not found"}
		}
		return json.RawMessage(`{"skill":{"name":"pdf","description":"Fill PDF forms.","instructions":"See references.",
			"references":[{"name":"templates.md","description":"d","path":"references/templates.md"},{"name":"x","path":"../x.md"},{"name":"y"}],
			"scripts":[{"name":"fill.py","description":"d","path":"scripts/fill.py"}],
			"assets":[{"name":"logo.png","description":"d","path":"assets/logo.png"},{"name":"dup","path":"references/templates.md"}]}}`), nil
	}
	f.ref = func(name, ref string) (json.RawMessage, error) {
		switch ref {
		case "references/templates.md":
			return json.RawMessage(`{"content":{"uri":"skill://pdf/references/templates.md","mimeType":"text/markdown","text":"# Templates\n"}}`), nil
		case "scripts/fill.py":
			return json.RawMessage(`{"content":{"uri":"skill://pdf/scripts/fill.py","text":"print(1)","blob":"AAE="}}`), nil
		case "assets/logo.png":
			return json.RawMessage(`{"content":{"uri":"skill://pdf/assets/logo.png","mimeType":"image/png","blob":"iVBORw0KGgoAAP8="}}`), nil
		}
		return nil, &jsonrpcError{code: -32004, msg: "Reference not found"}
	}
	return f
}
