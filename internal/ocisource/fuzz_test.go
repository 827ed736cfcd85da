package ocisource

import (
	"encoding/json"
	"io/fs"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// FuzzCheckManifest feeds manifests a registry could send: checkManifest
// never panics, and what it accepts keeps within the skill limits with
// valid, distinct file paths.
func FuzzCheckManifest(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"artifactType":"application/vnd.skillport.skill.v1","config":{"mediaType":"application/vnd.skillport.skill.config.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[{"mediaType":"application/vnd.skillport.skill.file.v1","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2,"annotations":{"org.opencontainers.image.title":"SKILL.md"}}]}`))
	f.Add([]byte(`{"artifactType":"application/vnd.skillport.skill.v1","layers":[{"size":-1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m ocispec.Manifest
		if json.Unmarshal(b, &m) != nil {
			return
		}
		if checkManifest(&m, "fuzz") != nil {
			return
		}
		var total int64
		seen := map[string]bool{}
		for _, l := range m.Layers {
			title := l.Annotations[AnnotationTitle]
			if l.Size < 0 || !fs.ValidPath(title) || seen[title] {
				t.Fatalf("accepted layer %+v", l)
			}
			seen[title] = true
			total += l.Size
		}
		if len(m.Layers) > maxFiles || total > maxBytes {
			t.Fatalf("accepted %d layers, %d bytes", len(m.Layers), total)
		}
	})
}

// FuzzParseRef: any argument parses or is refused, never a panic, and a
// parsed reference prints back as one that parses to the same.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"oci://ghcr.io/acme/skills:v1", "oci://127.0.0.1:5000/a/b@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "oci://x", "oci://[::1]:5000/r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		r2, err := ParseRef(r.String())
		if err != nil || r2 != r {
			t.Fatalf("%q parsed as %q, which parses as %q (%v)", s, r.String(), r2.String(), err)
		}
	})
}

// FuzzUntarSkill feeds archives a registry could send as a ToolHive
// skill's layer: untarSkill never panics, and what it accepts keeps within
// the skill limits, at valid paths, with SKILL.md.
func FuzzUntarSkill(f *testing.F) {
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := untarSkill(b)
		if err != nil {
			return
		}
		var total int
		for name, data := range files {
			if !fs.ValidPath(name) {
				t.Fatalf("accepted path %q", name)
			}
			total += len(data)
		}
		if len(files) > maxFiles || total > maxBytes || files["SKILL.md"] == nil {
			t.Fatalf("accepted %d files, %d bytes", len(files), total)
		}
	})
}
