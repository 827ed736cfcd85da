package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestRefusedAfterRelist: an entry refused by each listing is one refused
// entry, however often the origin is listed again: its diagnostics are
// those of the last listing, as its status count is (verify counted the
// entry once per listing of the run).
func TestRefusedAfterRelist(t *testing.T) {
	f := newFake("sloppy")
	f.addSkill("good", "fine", nil)
	f.entries = append(f.entries, json.RawMessage(`{"uri":"skill://`+strings.Repeat("p/", 1015)+`long/SKILL.md","frontmatter":{"name":"long","description":"d"},"resources":"dynamic"}`))
	h := connect(t, nil, Origin{Label: "sloppy", Transport: f.transport(t)})
	for round := range 3 {
		refused := 0
		for _, d := range h.Diagnostics() {
			if d.Refused {
				refused++
			}
		}
		if st := h.Origins()[0]; refused != 1 || st.Refused != 1 {
			t.Errorf("listing %d: %d refused diagnostics, status counts %d; want 1 and 1\n%s", round+1, refused, st.Refused, diags(h))
		}
		h.Refresh(context.Background())
	}
}
