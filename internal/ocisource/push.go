package ocisource

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/skillport/skillport/catalog"
)

// PushResult says what a push wrote.
type PushResult struct {
	// Digest is the digest the tag now names: the index, or the one
	// skill's manifest.
	Digest string
	// Skills is the number of skill artifacts.
	Skills int
	// Uploaded and Present count the blobs (files and configs) uploaded
	// and those the registry already held.
	Uploaded, Present int
	// Signatures counts the signature referrers attached, and those
	// already the newest of their artifact.
	Signatures struct{ Uploaded, Present int }
}

// Push writes every skill of cat to the repository named by ref, one
// artifact per skill, and tags (with ref's tag) an index over them, or
// the artifact itself when cat is a single skill served from its own
// folder. Blobs the registry already holds are not uploaded again. Each
// skill's signature (o.Sign's, else the catalog's Skill.Signature) is
// attached to its manifest as a referrer.
func Push(ctx context.Context, cat *catalog.Catalog, ref Ref, o *Options) (*PushResult, error) {
	if ref.Pinned() {
		return nil, fmt.Errorf("%s: push to a tag, not a digest (a digest names content that exists)", ref)
	}
	repo, err := repository(ref, o)
	if err != nil {
		return nil, err
	}
	skills := cat.Skills()
	if len(skills) == 0 {
		return nil, fmt.Errorf("push: the source holds no skill to push (a skill is a folder holding SKILL.md)")
	}
	res := &PushResult{Skills: len(skills)}
	p := &pusher{repo: repo, ref: ref, res: res, seen: map[digest.Digest]bool{}}
	if o != nil {
		p.sign = o.Sign
	}
	var entries []ocispec.Descriptor
	for _, s := range skills {
		desc, err := p.skill(ctx, cat, s)
		if err != nil {
			return nil, err
		}
		entries = append(entries, desc)
	}
	if len(skills) == 1 && skills[0].Dir == "." {
		if err := repo.Tag(ctx, entries[0], ref.Reference.Reference); err != nil {
			return nil, fmt.Errorf("%s: tagging: %w", ref, err)
		}
		res.Digest = entries[0].Digest.String()
		return res, nil
	}
	idx := ocispec.Index{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageIndex,
		ArtifactType: CatalogArtifactType,
		Manifests:    entries,
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return nil, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageIndex, b)
	if err := repo.PushReference(ctx, desc, bytes.NewReader(b), ref.Reference.Reference); err != nil {
		return nil, fmt.Errorf("%s: pushing the index: %w", ref, err)
	}
	res.Digest = desc.Digest.String()
	return res, nil
}

type pusher struct {
	repo *remote.Repository
	ref  Ref
	res  *PushResult
	seen map[digest.Digest]bool // blobs known to be in the registry
	sign func(*catalog.Skill) ([]byte, error)
}

// skill pushes one skill's blobs and manifest and returns the manifest's
// descriptor, annotated with the skill path for the index.
func (p *pusher) skill(ctx context.Context, cat *catalog.Catalog, s *catalog.Skill) (ocispec.Descriptor, error) {
	fm, err := json.Marshal(s.Frontmatter)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%s: frontmatter: %v", s.Path, err)
	}
	cfg, err := json.Marshal(Config{Path: s.Path, Frontmatter: fm})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	cfgDesc := content.NewDescriptorFromBytes(ConfigMediaType, cfg)
	if err := p.blob(ctx, cfgDesc, func() ([]byte, error) { return cfg, nil }, s.Path+" (config)"); err != nil {
		return ocispec.Descriptor{}, err
	}
	layers := make([]ocispec.Descriptor, 0, len(s.Files))
	for _, f := range s.Files {
		rel := f.Path
		if s.Dir != "." {
			rel = strings.TrimPrefix(f.Path, s.Dir+"/")
		}
		d := ocispec.Descriptor{
			MediaType:   FileMediaType,
			Digest:      digest.Digest(f.Digest),
			Size:        f.Size,
			Annotations: map[string]string{AnnotationTitle: rel},
		}
		if err := p.blob(ctx, d, func() ([]byte, error) { return cat.ReadFile(f) }, f.Path); err != nil {
			return ocispec.Descriptor{}, err
		}
		layers = append(layers, d)
	}
	// Built by hand rather than with oras.PackManifest, which stamps the
	// time of packing: an unchanged skill keeps its manifest digest.
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       cfgDesc,
		Layers:       layers,
		Annotations:  map[string]string{AnnotationPath: s.Path},
	}
	desc, err := p.manifest(ctx, m, s.Path)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	bundle := s.Signature
	if p.sign != nil {
		if bundle, err = p.sign(s); err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("push: signing %s: %w", s.URI, err)
		}
	}
	if len(bundle) > 0 {
		if err := p.pushSignature(ctx, desc, bundle, s.Path); err != nil {
			return ocispec.Descriptor{}, err
		}
	}
	desc.ArtifactType = ArtifactType
	desc.Annotations = map[string]string{AnnotationPath: s.Path}
	return desc, nil
}

// manifest puts m unless the registry already holds it, and returns its
// descriptor.
func (p *pusher) manifest(ctx context.Context, m ocispec.Manifest, name string) (ocispec.Descriptor, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, b)
	ok, err := p.repo.Exists(ctx, desc)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%s: %s: %w", p.ref, name, err)
	}
	if !ok {
		if err := p.repo.Push(ctx, desc, bytes.NewReader(b)); err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("%s: pushing the manifest of %s: %w", p.ref, name, authHint(p.ref, err))
		}
	}
	return desc, nil
}

// blob uploads one blob unless the registry already holds it.
func (p *pusher) blob(ctx context.Context, d ocispec.Descriptor, read func() ([]byte, error), name string) error {
	if p.seen[d.Digest] {
		return nil
	}
	ok, err := p.repo.Exists(ctx, d)
	if err != nil {
		return fmt.Errorf("%s: blob %s (%s): %w", p.ref, d.Digest, name, authHint(p.ref, err))
	}
	if ok {
		p.res.Present++
	} else {
		data, err := read()
		if err != nil {
			return fmt.Errorf("push: %s: %w", name, err)
		}
		if err := p.repo.Push(ctx, ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}, bytes.NewReader(data)); err != nil {
			return fmt.Errorf("%s: uploading blob %s (%s): %w", p.ref, d.Digest, name, authHint(p.ref, err))
		}
		p.res.Uploaded++
	}
	p.seen[d.Digest] = true
	return nil
}
