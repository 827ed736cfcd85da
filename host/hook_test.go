package host

import (
	"context"
	"errors"
	"testing"
)

// TestCoreWithoutProfiles connects a host whose compatibility profiles'
// hook is unregistered, as if their files were deleted: a server of the
// Skills Extension is listed, loaded and read as always, and a server of
// the pre-extension skills primitive, which the profiles would read, serves
// no skills.
func TestCoreWithoutProfiles(t *testing.T) {
	saved := compatProfiles
	compatProfiles = nil
	t.Cleanup(func() { compatProfiles = saved })

	f := newFake("docs-server")
	f.addSkill("pdf-processing", "Extract PDF text", map[string]string{"references/GUIDE.md": "guide"})
	old := sep2076Fake()
	h := connect(t, &Options{Approver: &recorder{}}, Origin{Label: "docs", Transport: f.transport(t)}, Origin{Label: "old", Transport: old.transport(t)})

	e, err := h.Lookup("pdf-processing")
	if err != nil {
		t.Fatal(err)
	}
	l, err := h.Load(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if rf, err := l.ReadFile(context.Background(), "references/GUIDE.md"); err != nil || string(rf.Data) != "guide" || !rf.Verified {
		t.Errorf("reading a file of the extension's skill: %+v, %v", rf, err)
	}
	seen := false
	for _, st := range h.Origins() {
		if st.Label != "old" {
			continue
		}
		seen = true
		if st.Profile != "" || !errors.Is(st.Err, ErrNoSkills) {
			t.Errorf("the legacy server without the profiles: profile %q, err %v; want none and ErrNoSkills", st.Profile, st.Err)
		}
	}
	if !seen {
		t.Error("no status for the legacy server")
	}
	if _, err := h.Lookup("pdf"); err == nil {
		t.Error("a skill of the legacy server is listed without the profiles")
	}
}
