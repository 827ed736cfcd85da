package ocisource_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/skillport/skillport/internal/ocisource"
	"github.com/skillport/skillport/internal/ocitest"
)

// TestToolHiveRoundTrip: a skill pushed in ToolHive's layout has its
// index, per-platform manifests, labelled image config and one tar+gzip
// layer, and reads back as the same skill, with the same file digests as
// the folder; a source of several skills is refused.
func TestToolHiveRoundTrip(t *testing.T) {
	reg := ocitest.Start(t)
	ctx := context.Background()
	r := ref(t, "oci://"+reg.Host+"/skills:1.0.0")
	if _, err := ocisource.PushToolHive(ctx, openDir(t, examples), r, nil); err == nil || !strings.Contains(err.Error(), "one skill per reference") {
		t.Errorf("push of a tree of skills: %v", err)
	}
	one := openDir(t, filepath.Join(examples, "code-review"))
	r = ref(t, "oci://"+reg.Host+"/code-review:1.0.0")
	res, err := ocisource.PushToolHive(ctx, one, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := remote.NewRepository(reg.Host + "/code-review")
	repo.PlainHTTP = true
	desc, b, err := oras_fetch(ctx, repo, "1.0.0")
	if err != nil || desc.Digest.String() != res.Digest {
		t.Fatalf("tag: %v %v", desc, err)
	}
	var idx ocispec.Index
	json.Unmarshal(b, &idx)
	if idx.ArtifactType != ocisource.ToolHiveArtifactType || len(idx.Manifests) != 2 || idx.Manifests[0].Platform == nil || idx.Annotations["dev.toolhive.skills.name"] != "code-review" {
		t.Fatalf("index %s", b)
	}
	mb, err := content.FetchAll(ctx, repo, idx.Manifests[0])
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	json.Unmarshal(mb, &m)
	if m.Config.MediaType != ocispec.MediaTypeImageConfig || len(m.Layers) != 1 || m.Layers[0].MediaType != ocispec.MediaTypeImageLayerGzip {
		t.Fatalf("manifest %s", mb)
	}
	cb, _ := content.FetchAll(ctx, repo, m.Config)
	var img ocispec.Image
	json.Unmarshal(cb, &img)
	if img.Config.Labels["dev.toolhive.skills.name"] != "code-review" || !strings.Contains(img.Config.Labels["dev.toolhive.skills.files"], "SKILL.md") {
		t.Errorf("config labels %v", img.Config.Labels)
	}
	src, err := ocisource.Open(ctx, r, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(fileSet(one), fileSet(src.Catalog())) {
		t.Errorf("ToolHive round trip: %v, want %v", fileSet(src.Catalog()), fileSet(one))
	}
	// A second push of the same skill is the same index: reproducible.
	res2, err := ocisource.PushToolHive(ctx, one, r, nil)
	if err != nil || res2.Digest != res.Digest || res2.Uploaded != 0 {
		t.Errorf("second push: %+v %v, want digest %s and no upload", res2, err, res.Digest)
	}
}

// tarGz builds an archive as another packer might: "./" names, folder
// entries, or whatever the case needs.
func tarGz(t *testing.T, entries []tar.Header, data map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gw)
	for _, h := range entries {
		h.Size = int64(len(data[h.Name]))
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data[h.Name]))
	}
	tw.Close()
	gw.Close()
	return buf.Bytes()
}

// pushToolHiveArtifact pushes a ToolHive manifest around layer, named
// name in its config labels, and tags it.
func pushToolHiveArtifact(t *testing.T, repo *remote.Repository, tag, name string, layer []byte) {
	t.Helper()
	ctx := context.Background()
	img := ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}, Config: ocispec.ImageConfig{Labels: map[string]string{"dev.toolhive.skills.name": name}}}
	cb, _ := json.Marshal(img)
	cd := content.NewDescriptorFromBytes(ocispec.MediaTypeImageConfig, cb)
	ld := content.NewDescriptorFromBytes(ocispec.MediaTypeImageLayerGzip, layer)
	for _, x := range []struct {
		d ocispec.Descriptor
		b []byte
	}{{cd, cb}, {ld, layer}} {
		if ok, _ := repo.Exists(ctx, x.d); !ok {
			if err := repo.Push(ctx, x.d, bytes.NewReader(x.b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: ocisource.ToolHiveArtifactType, Config: cd, Layers: []ocispec.Descriptor{ld}}
	mb, _ := json.Marshal(m)
	if err := repo.PushReference(ctx, content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, mb), bytes.NewReader(mb), tag); err != nil {
		t.Fatal(err)
	}
}

// TestToolHiveArchivesAreChecked reads ToolHive artifacts packed by
// another tool: "./" names and folder entries are read; links, escaping
// paths, a missing SKILL.md, a bad name and an archive that inflates past
// the skill limit are refused, naming the artifact.
func TestToolHiveArchivesAreChecked(t *testing.T) {
	reg := ocitest.Start(t)
	ctx := context.Background()
	repo, _ := remote.NewRepository(reg.Host + "/th")
	repo.PlainHTTP = true
	md := "---\nname: hello\ndescription: Says hello.\n---\nHello.\n"
	reg2 := func(name string) tar.Header { return tar.Header{Name: name, Typeflag: tar.TypeReg} }
	big := strings.Repeat("\x00", 17<<20)
	for _, c := range []struct {
		name    string
		skill   string
		entries []tar.Header
		data    map[string]string
		err     string
	}{
		{"dot slash and folders", "hello", []tar.Header{{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}, reg2("./SKILL.md"), {Name: "./scripts/", Typeflag: tar.TypeDir, Mode: 0o755}, reg2("./scripts/run.sh")},
			map[string]string{"./SKILL.md": md, "./scripts/run.sh": "#!/bin/sh\n"}, ""},
		{"symlink", "hello", []tar.Header{reg2("SKILL.md"), {Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}, map[string]string{"SKILL.md": md}, "only regular files"},
		{"escaping path", "hello", []tar.Header{reg2("SKILL.md"), reg2("../evil")}, map[string]string{"SKILL.md": md, "../evil": "x"}, "not a relative"},
		{"no SKILL.md", "hello", []tar.Header{reg2("README.md")}, map[string]string{"README.md": "x"}, "no SKILL.md"},
		{"bad name", "Hello World", []tar.Header{reg2("SKILL.md")}, map[string]string{"SKILL.md": md}, "not a skill name"},
		{"inflates past the limit", "hello", []tar.Header{reg2("SKILL.md"), reg2("zeros")}, map[string]string{"SKILL.md": md, "zeros": big}, "skill limit"},
		{"twice", "hello", []tar.Header{reg2("SKILL.md"), reg2("./SKILL.md")}, map[string]string{"SKILL.md": md, "./SKILL.md": md}, "twice"},
	} {
		tag := strings.ReplaceAll(c.name, " ", "-")
		pushToolHiveArtifact(t, repo, tag, c.skill, tarGz(t, c.entries, c.data))
		src, err := ocisource.Open(ctx, ref(t, "oci://"+reg.Host+"/th:"+tag), nil, nil)
		if c.err == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			if f := src.Catalog().File("skill://hello/scripts/run.sh"); f == nil {
				t.Errorf("%s: skills %v", c.name, fileSet(src.Catalog()))
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "th:"+tag) {
			t.Errorf("%s: %v, want an error naming the reference and %q", c.name, err, c.err)
		}
	}
}
