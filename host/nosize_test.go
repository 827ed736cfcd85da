package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// withoutSizes drops "size" from every resource of a listing entry, as
// Hugging Face's hf-mcp-server lists them.
func withoutSizes(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	for _, r := range e["resources"].([]any) {
		delete(r.(map[string]any), "size")
	}
	b, _ := json.Marshal(e)
	return b
}

// TestEntryWithoutSizes: an entry whose resources lack the size the
// extension requires is listed with a warning naming the deviation; its
// files are verified by digest, and reads stay within the 16 MiB limit.
func TestEntryWithoutSizes(t *testing.T) {
	f := newFake("hf")
	big := strings.Repeat("b", 9<<20)
	uri := f.addSkill("pdf", "PDF", map[string]string{
		"references/GUIDE.md":   `Use "pdftk" <in> & <out>`,
		"references/ALTERED.md": "published text",
		"big/ONE.md":            big,
		"big/TWO.md":            big,
	})
	f.entries = []json.RawMessage{withoutSizes(t, f.entryFor(uri, map[string]any{"name": "pdf", "description": "PDF"}))}
	f.files["skill://pdf/references/ALTERED.md"] = "altered text!!"
	// Two 9 MiB reads through go-sdk on a loaded 2-core machine can take
	// longer than the default call timeout; the limits, not time, are tested.
	h := connect(t, &Options{Approver: &recorder{}, CallTimeout: time.Minute}, Origin{Label: "hf", Transport: f.transport(t)})

	e, err := h.Lookup("pdf")
	if err != nil {
		t.Fatalf("the entry was not accepted: %v\n%s", err, diags(h))
	}
	if e.SizesMissing != 5 || e.Declined != nil || !hasDiag(h, "hf", "server deviates from the Skills extension: 5 of 5 resources have no size") {
		t.Fatalf("SizesMissing %d, declined %v; want 5 and a warning naming the deviation:\n%s", e.SizesMissing, e.Declined, diags(h))
	}
	tools := h.Tools()
	if _, err := tools.ReadSkill(context.Background(), "pdf"); err != nil {
		t.Fatalf("read_skill: %v", err)
	}
	l, _ := tools.Active("pdf")
	ctx := context.Background()
	if file, err := l.ReadFile(ctx, "references/GUIDE.md"); err != nil || string(file.Data) != `Use "pdftk" <in> & <out>` || !file.Verified {
		t.Errorf("GUIDE.md = %+v, %v", file, err)
	}
	var verr *VerificationError
	if _, err := l.ReadFile(ctx, "references/ALTERED.md"); !errors.As(err, &verr) || verr.Reason != ReasonDigest {
		t.Errorf("altered file: %v; want a digest mismatch (the digest still binds content without a size)", err)
	}
	if _, err := l.ReadFile(ctx, "big/ONE.md"); err != nil {
		t.Fatalf("first 9 MiB: %v", err)
	}
	if _, err := l.ReadFile(ctx, "big/TWO.md"); !errors.As(err, &verr) || verr.Reason != ReasonLimit {
		t.Errorf("past 16 MiB for the skill: %v; want %q", err, ReasonLimit)
	}

	// verify and pull read the same way.
	if _, err := h.FetchAll(ctx, e); !errors.As(err, &verr) {
		t.Errorf("FetchAll of a skill with an altered file: %v; want a verification error", err)
	}
}

// TestSizeStillChecked: a present size must still be a non-negative
// integer; only its absence is tolerated.
func TestSizeStillChecked(t *testing.T) {
	for _, size := range []string{`null`, `-1`, `"1"`, `1.5`} {
		raw := `{"uri":"skill://s/SKILL.md","frontmatter":{"name":"s","description":"d"},"resources":[{"uri":"skill://s/SKILL.md","digest":"sha256:` + strings.Repeat("0", 64) + `","size":` + size + `}]}`
		if _, err := DecodeEntry("x", []byte(raw)); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("size %s: %v; want an invalid entry", size, err)
		}
	}
}
