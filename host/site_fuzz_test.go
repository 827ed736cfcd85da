package host

import (
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/skillport/skillport/internal/sigfile"
)

// FuzzUnpack: whatever a site serves as an archive, unpack never panics,
// and what it accepts stays inside the skill folder and its bounds.
func FuzzUnpack(f *testing.F) {
	f.Add([]byte("PK\x03\x04"), "application/zip")
	f.Add([]byte("\x1f\x8b\x08\x00"), "application/gzip")
	f.Add([]byte("SKILL.md"), "")
	f.Fuzz(func(t *testing.T, body []byte, ctype string) {
		const maxFiles, maxBytes = 8, 1 << 16
		files, err := unpack(body, ctype, "x", maxFiles, maxBytes)
		if err != nil {
			return
		}
		var total int
		for name, data := range files {
			if !fs.ValidPath(name) || name == "." {
				t.Errorf("accepted path %q", name)
			}
			total += len(data)
		}
		if len(files) > maxFiles || total > maxBytes || files["SKILL.md"] == nil {
			t.Errorf("accepted %d files, %d bytes, SKILL.md %v", len(files), total, files["SKILL.md"] != nil)
		}
	})
}

// FuzzSiteBundle: whatever _meta a discovery entry carries, siteBundle
// never panics, and a bundle it accepts is a JSON object within the
// bundle size limit.
func FuzzSiteBundle(f *testing.F) {
	f.Add([]byte(`{"io.skillport/signature":{"mediaType":"x"}}`))
	f.Add([]byte(`{"io.skillport/signature":"x","io.skillport/signature":{}}`))
	f.Add([]byte(`{"io.skillport/signature":[]}`))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, meta []byte) {
		b, err := siteBundle(meta)
		if err != nil || b == nil {
			return
		}
		if len(b) > sigfile.MaxBytes || b[0] != '{' || !json.Valid(b) {
			t.Errorf("accepted bundle %q", b)
		}
	})
}
