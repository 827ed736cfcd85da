package ocisource

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/filemode"
)

// ToolHive's skill artifact (thv skill build/push, package oci/skills of
// stacklok/toolhive-core): an image index over one image manifest per
// platform, each with an OCI image config carrying the metadata as labels
// and one tar+gzip layer holding the skill folder's files.
const (
	// ToolHiveArtifactType marks ToolHive's skill index and manifests.
	ToolHiveArtifactType = "dev.toolhive.skills.v1"
	toolhiveName         = "dev.toolhive.skills.name"
	toolhiveDescription  = "dev.toolhive.skills.description"
	toolhiveVersion      = "dev.toolhive.skills.version"
	toolhiveAllowedTools = "dev.toolhive.skills.allowedTools"
	toolhiveLicense      = "dev.toolhive.skills.license"
	toolhiveFiles        = "dev.toolhive.skills.files"
	// maxArchiveOverhead is what a tar of maxFiles files adds to their
	// bytes (headers, PAX records, padding), for the decompression bound.
	maxArchiveOverhead = 4 << 20
)

// toolhiveNameRE is the skill name ToolHive accepts, which becomes the
// skill path.
var toolhiveNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)

// toolhivePlatforms are the platforms ToolHive packs for (Kubernetes
// image volumes); the skill is the same in each.
var toolhivePlatforms = []ocispec.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// toolhiveManifest picks the manifest of a ToolHive index to read: the
// first platform's (every platform holds the same layer).
func toolhiveManifest(ref Ref, idx *ocispec.Index, d digest.Digest) (ocispec.Descriptor, error) {
	for _, m := range idx.Manifests {
		if m.MediaType == ocispec.MediaTypeImageManifest {
			return m, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s: ToolHive index %s lists no image manifest", ref, d)
}

// readToolHive checks a ToolHive skill manifest's declared shape and sizes
// and only then fetches its config and archive, each verified by digest,
// and unpacks the archive within the skill limits.
func readToolHive(ctx context.Context, repo *cachedRepo, ref Ref, d ocispec.Descriptor, m *ocispec.Manifest, where string, meta *atomic.Int64, maxMeta int64) (skillArtifact, error) {
	switch {
	case m.Config.MediaType != ocispec.MediaTypeImageConfig:
		return skillArtifact{}, fmt.Errorf("%s: config media type %q, want %s", where, m.Config.MediaType, ocispec.MediaTypeImageConfig)
	case m.Config.Size < 0 || m.Config.Size > maxConfig:
		return skillArtifact{}, fmt.Errorf("%s: config blob of %d bytes exceeds %d", where, m.Config.Size, maxConfig)
	case len(m.Layers) != 1 || m.Layers[0].MediaType != ocispec.MediaTypeImageLayerGzip:
		return skillArtifact{}, fmt.Errorf("%s: a ToolHive skill has one %s layer", where, ocispec.MediaTypeImageLayerGzip)
	case m.Layers[0].Size < 0 || m.Layers[0].Size > maxBytes+maxArchiveOverhead:
		return skillArtifact{}, fmt.Errorf("%s: the archive declares %d bytes, over the skill limit of %d; refused before fetching", where, m.Layers[0].Size, maxBytes)
	}
	if meta.Add(m.Config.Size) > maxMeta {
		return skillArtifact{}, fmt.Errorf("%s: the manifests and configs declare more than %d bytes; refused before fetching", where, maxMeta)
	}
	cb, err := content.FetchAll(ctx, repo, m.Config)
	if err != nil {
		return skillArtifact{}, fmt.Errorf("%s: config %s: %w", where, m.Config.Digest, err)
	}
	var img ocispec.Image
	if err := json.Unmarshal(cb, &img); err != nil {
		return skillArtifact{}, fmt.Errorf("%s: config %s: %v", where, m.Config.Digest, err)
	}
	name := img.Config.Labels[toolhiveName]
	if !toolhiveNameRE.MatchString(name) {
		return skillArtifact{}, fmt.Errorf("%s: config label %s %q is not a skill name (lowercase letters, digits and '-', at most 64)", where, toolhiveName, name)
	}
	where += " (" + name + ")"
	layer, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		return skillArtifact{}, fmt.Errorf("%s: archive %s: %w; the registry's copy is damaged or forged, refused", where, m.Layers[0].Digest, err)
	}
	files, err := untarSkill(layer)
	if err != nil {
		return skillArtifact{}, fmt.Errorf("%s: archive %s: %w", where, m.Layers[0].Digest, err)
	}
	return skillArtifact{where: where, path: name, digest: d.Digest, m: *m, files: files}, nil
}

// untarSkill unpacks a skill's tar+gzip archive: regular files only, at
// relative paths, within the skill limits, SKILL.md among them.
func untarSkill(layer []byte) (map[string][]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		return nil, err
	}
	limit := &io.LimitedReader{R: gz, N: maxBytes + maxArchiveOverhead + 1}
	tr := tar.NewReader(limit)
	files := map[string][]byte{}
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if limit.N <= 0 {
				return nil, fmt.Errorf("decompresses to more than %d bytes; refused", maxBytes+maxArchiveOverhead)
			}
			return nil, err
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch {
		case h.Typeflag == tar.TypeDir:
			continue
		case h.Typeflag != tar.TypeReg:
			return nil, fmt.Errorf("%s: only regular files are accepted (type %q)", h.Name, h.Typeflag)
		case !fs.ValidPath(name) || name == ".":
			return nil, fmt.Errorf("%q is not a relative slash-separated file path", h.Name)
		case files[name] != nil:
			return nil, fmt.Errorf("%s appears twice", name)
		case len(files) >= maxFiles:
			return nil, fmt.Errorf("more than %d files, the skill limit", maxFiles)
		case h.Size < 0 || h.Size > maxBytes-total:
			return nil, fmt.Errorf("%s: the files would exceed the skill limit of %d bytes", name, maxBytes)
		}
		b := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, b); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		total += h.Size
		files[name] = b
	}
	if files[catalog.FileNameSKILL] == nil {
		return nil, fmt.Errorf("no %s at the archive's root", catalog.FileNameSKILL)
	}
	return files, nil
}

// PushToolHive writes the one skill of cat to the repository named by ref
// in ToolHive's layout (docs/oci.md), so that thv skill install reads it.
// The archive is reproducible: sorted entries, time zero, owner 0.
func PushToolHive(ctx context.Context, cat *catalog.Catalog, ref Ref, o *Options) (*PushResult, error) {
	if ref.Pinned() {
		return nil, fmt.Errorf("%s: push to a tag, not a digest (a digest names content that exists)", ref)
	}
	skills := cat.Skills()
	if len(skills) != 1 {
		return nil, fmt.Errorf("%s: the ToolHive format holds one skill per reference, the source has %d; push each skill folder to its own repository", ref, len(skills))
	}
	s := skills[0]
	name := s.Frontmatter.Name()
	if !toolhiveNameRE.MatchString(name) {
		return nil, fmt.Errorf("%s: skill name %q is not one ToolHive accepts (lowercase letters, digits and '-')", s.URI, name)
	}
	repo, err := repository(ref, o)
	if err != nil {
		return nil, err
	}
	res := &PushResult{Skills: 1}
	p := &pusher{repo: repo, ref: ref, res: res, seen: map[digest.Digest]bool{}}

	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	epoch := time.Unix(0, 0).UTC()
	var names []string
	for _, f := range s.Files {
		rel := f.Path
		if s.Dir != "." {
			rel = strings.TrimPrefix(f.Path, s.Dir+"/")
		}
		names = append(names, rel)
	}
	slices.Sort(names)
	byName := map[string]*catalog.File{}
	for _, f := range s.Files {
		rel := f.Path
		if s.Dir != "." {
			rel = strings.TrimPrefix(f.Path, s.Dir+"/")
		}
		byName[rel] = f
	}
	for _, n := range names {
		b, err := cat.ReadFile(byName[n])
		if err != nil {
			return nil, fmt.Errorf("push: %s: %w", n, err)
		}
		h := &tar.Header{Name: n, Size: int64(len(b)), Mode: int64(filemode.Mode(b)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var gzBuf bytes.Buffer
	gw, _ := gzip.NewWriterLevel(&gzBuf, gzip.BestCompression)
	gw.Write(tarBuf.Bytes())
	if err := gw.Close(); err != nil {
		return nil, err
	}
	layer := content.NewDescriptorFromBytes(ocispec.MediaTypeImageLayerGzip, gzBuf.Bytes())
	if err := p.blob(ctx, layer, func() ([]byte, error) { return gzBuf.Bytes(), nil }, s.Path+" (archive)"); err != nil {
		return nil, err
	}

	str := func(k string) string { v, _ := s.Frontmatter.String(k); return v }
	var tools []string
	if v, ok := s.Frontmatter.Get("allowed-tools"); ok {
		switch t := v.(type) {
		case string:
			tools = strings.Fields(t)
		case []any:
			for _, x := range t {
				if xs, ok := x.(string); ok {
					tools = append(tools, xs)
				}
			}
		}
	}
	toolsJSON, _ := json.Marshal(tools)
	filesJSON, _ := json.Marshal(names)
	version := str("version")
	if md, ok := s.Frontmatter.Get("metadata"); ok && version == "" {
		if m, ok := md.(map[string]any); ok {
			version, _ = m["version"].(string)
		}
	}
	annotations := map[string]string{
		ocispec.AnnotationCreated: epoch.Format(time.RFC3339),
		toolhiveName:              name,
		toolhiveDescription:       s.Frontmatter.Description(),
		toolhiveVersion:           version,
	}
	var entries []ocispec.Descriptor
	for _, pl := range toolhivePlatforms {
		img := ocispec.Image{
			Created:  &epoch,
			Platform: pl,
			Config: ocispec.ImageConfig{Labels: map[string]string{
				toolhiveName: name, toolhiveDescription: s.Frontmatter.Description(), toolhiveVersion: version,
				toolhiveAllowedTools: string(toolsJSON), toolhiveLicense: str("license"), toolhiveFiles: string(filesJSON),
			}},
			RootFS:  ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromBytes(tarBuf.Bytes())}},
			History: []ocispec.History{{Created: &epoch, CreatedBy: "skillport push --format toolhive"}},
		}
		cb, err := json.Marshal(img)
		if err != nil {
			return nil, err
		}
		cfg := content.NewDescriptorFromBytes(ocispec.MediaTypeImageConfig, cb)
		if err := p.blob(ctx, cfg, func() ([]byte, error) { return cb, nil }, s.Path+" (config)"); err != nil {
			return nil, err
		}
		m := ocispec.Manifest{
			Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
			ArtifactType: ToolHiveArtifactType, Config: cfg,
			Layers: []ocispec.Descriptor{layer}, Annotations: annotations,
		}
		desc, err := p.manifest(ctx, m, s.Path)
		if err != nil {
			return nil, err
		}
		pl := pl
		desc.Platform = &pl
		entries = append(entries, desc)
	}
	idx := ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		ArtifactType: ToolHiveArtifactType, Manifests: entries, Annotations: annotations,
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return nil, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageIndex, b)
	if err := repo.PushReference(ctx, desc, bytes.NewReader(b), ref.Reference.Reference); err != nil {
		return nil, fmt.Errorf("%s: pushing the index: %w", ref, authHint(ref, err))
	}
	res.Digest = desc.Digest.String()
	return res, nil
}
