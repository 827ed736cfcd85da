package host

import (
	"io/fs"
	"testing"
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
