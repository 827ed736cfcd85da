package ocisource

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/sigfile"
)

// Signatures travel as OCI referrers of a skill's manifest, laid out as
// cosign attaches Sigstore bundles (its "Cosign Bundle Specification"):
// an image manifest of this artifactType, the empty config, one layer of
// the same media type holding the bundle's JSON, and the skill's manifest
// as subject.
const (
	// SignatureArtifactType is the Sigstore bundle media type, the
	// artifactType and layer media type of a signature referrer.
	SignatureArtifactType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// annotationContent and annotationPredicate describe the bundle in the
	// referrers index, as cosign writes them.
	annotationContent   = "dev.sigstore.bundle.content"
	annotationPredicate = "dev.sigstore.bundle.predicateType"
	// skillPredicate is the in-toto predicate type skillport signs
	// (docs/signing.md).
	skillPredicate = "https://skillport.dev/attestations/skill-resources/v1"
	// maxReferrers bounds the signature referrers of one artifact
	// considered; maxSigManifest bounds a signature manifest's size.
	maxReferrers   = 64
	maxSigManifest = 64 << 10
)

// pushSignature attaches bundle to the skill manifest subject, unless the
// newest signature referrer already holds these bytes.
func (p *pusher) pushSignature(ctx context.Context, subject ocispec.Descriptor, bundle []byte, name string) error {
	bundleDesc := content.NewDescriptorFromBytes(SignatureArtifactType, bundle)
	cur, err := newestSignature(ctx, &cachedRepo{Repository: p.repo}, p.ref, subject, name)
	if err != nil {
		return err
	}
	if cur != nil && cur.layer.Digest == bundleDesc.Digest {
		p.res.Signatures.Present++
		return nil
	}
	if err := p.blob(ctx, bundleDesc, func() ([]byte, error) { return bundle, nil }, name+" (signature)"); err != nil {
		return err
	}
	if err := p.blob(ctx, ocispec.DescriptorEmptyJSON, func() ([]byte, error) { return ocispec.DescriptorEmptyJSON.Data, nil }, "empty config"); err != nil {
		return err
	}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: SignatureArtifactType,
		Config:       ocispec.Descriptor{MediaType: ocispec.MediaTypeEmptyJSON, Digest: ocispec.DescriptorEmptyJSON.Digest, Size: ocispec.DescriptorEmptyJSON.Size},
		Layers:       []ocispec.Descriptor{{MediaType: SignatureArtifactType, Digest: bundleDesc.Digest, Size: bundleDesc.Size}},
		Subject:      &ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		// The creation time picks the newest of several signatures.
		Annotations: map[string]string{
			annotationContent:         "dsse-envelope",
			annotationPredicate:       skillPredicate,
			ocispec.AnnotationCreated: time.Now().UTC().Format(time.RFC3339Nano),
		},
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, b)
	if err := p.repo.Push(ctx, desc, bytes.NewReader(b)); err != nil {
		return fmt.Errorf("%s: attaching the signature of %s: %w", p.ref, name, authHint(p.ref, err))
	}
	p.res.Signatures.Uploaded++
	return nil
}

// Attach signs each skill of the source as its catalog publishes it and
// attaches the bundle as a referrer of the skill's manifest, unless the
// newest referrer already holds the same bundle: signing what was pushed
// without re-pushing it. ToolHive artifacts are left out (they carry no
// skillport signature). It returns the bundles attached and those
// already attached.
func (s *Source) Attach(ctx context.Context, sign func(*catalog.Skill) ([]byte, error)) (attached, present int, err error) {
	s.update.Lock()
	defer s.update.Unlock()
	s.mu.Lock()
	cat, arts := s.cat, s.arts
	s.mu.Unlock()
	byPath := map[string]skillArtifact{}
	for _, a := range arts {
		if a.files == nil {
			byPath[a.path] = a
		}
	}
	p := &pusher{repo: s.repo.Repository, ref: s.ref, res: &PushResult{}, seen: map[digest.Digest]bool{}}
	for _, sk := range cat.Skills() {
		a, ok := byPath[sk.Path]
		if !ok {
			continue
		}
		bundle, err := sign(sk)
		if err != nil {
			return p.res.Signatures.Uploaded, p.res.Signatures.Present, fmt.Errorf("signing %s: %w", sk.URI, err)
		}
		if len(bundle) == 0 {
			continue
		}
		subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: a.digest, Size: a.size}
		if err := p.pushSignature(ctx, subject, bundle, sk.Path); err != nil {
			return p.res.Signatures.Uploaded, p.res.Signatures.Present, err
		}
	}
	return p.res.Signatures.Uploaded, p.res.Signatures.Present, nil
}

// signatureRef is a signature referrer, checked, with its bundle's layer.
type signatureRef struct {
	manifest ocispec.Descriptor
	layer    ocispec.Descriptor
}

// newestSignature returns the signature referrer of subject with the
// latest creation time (ties: the greater digest), checked against the
// layout, or nil when there is none. Its bundle is not fetched.
func newestSignature(ctx context.Context, repo *cachedRepo, ref Ref, subject ocispec.Descriptor, name string) (*signatureRef, error) {
	var refs []ocispec.Descriptor
	err := repo.Referrers(ctx, subject, SignatureArtifactType, func(page []ocispec.Descriptor) error {
		refs = append(refs, page...)
		if len(refs) > maxReferrers {
			return fmt.Errorf("more than %d signature referrers", maxReferrers)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: listing the signatures of %s (%s): %w", ref, name, subject.Digest, authHint(ref, err))
	}
	if len(refs) == 0 {
		return nil, nil
	}
	newest := slices.MaxFunc(refs, func(a, b ocispec.Descriptor) int {
		if c := compareTime(a.Annotations[ocispec.AnnotationCreated], b.Annotations[ocispec.AnnotationCreated]); c != 0 {
			return c
		}
		return bytes.Compare([]byte(a.Digest), []byte(b.Digest))
	})
	where := fmt.Sprintf("%s: signature %s of %s", ref, newest.Digest, name)
	if newest.MediaType != ocispec.MediaTypeImageManifest || newest.Size < 0 || newest.Size > maxSigManifest {
		return nil, fmt.Errorf("%s: a %q of %d bytes is not a signature manifest (at most %d bytes); refused", where, newest.MediaType, newest.Size, maxSigManifest)
	}
	b, err := content.FetchAll(ctx, repo, ocispec.Descriptor{MediaType: newest.MediaType, Digest: newest.Digest, Size: newest.Size})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	switch {
	case m.ArtifactType != SignatureArtifactType:
		return nil, fmt.Errorf("%s: artifactType %q, want %s", where, m.ArtifactType, SignatureArtifactType)
	case m.Subject == nil || m.Subject.Digest != subject.Digest:
		return nil, fmt.Errorf("%s: its subject is not %s; refused", where, subject.Digest)
	case len(m.Layers) != 1 || m.Layers[0].MediaType != SignatureArtifactType:
		return nil, fmt.Errorf("%s: want one layer of media type %s", where, SignatureArtifactType)
	case m.Layers[0].Size < 0 || m.Layers[0].Size > sigfile.MaxBytes:
		return nil, fmt.Errorf("%s: the bundle declares %d bytes, over the %d-byte limit of a signature bundle; refused before fetching", where, m.Layers[0].Size, sigfile.MaxBytes)
	}
	if err := m.Layers[0].Digest.Validate(); err != nil {
		return nil, fmt.Errorf("%s: bundle digest: %v", where, err)
	}
	return &signatureRef{manifest: newest, layer: m.Layers[0]}, nil
}

// maxTags bounds the tags listed to learn which manifests have
// referrers; a repository with more is asked manifest by manifest. A
// variable for the test of the bound.
var maxTags = 4 * MaxSkills

// listReferrerTags sets repo.referrerTags when the registry has no
// referrers API (distribution 2, GHCR): one listing of the tags then
// replaces a lookup per skill, which dominated a start from the cache.
// The first Referrers call teaches oras-go whether the API exists; it
// refuses to be told "unsupported" only when it learnt "supported".
func listReferrerTags(ctx context.Context, repo *cachedRepo, probe ocispec.Descriptor) {
	repo.referrerTags = nil
	if err := repo.Referrers(ctx, probe, SignatureArtifactType, func([]ocispec.Descriptor) error { return nil }); err != nil {
		return
	}
	if repo.SetReferrersCapability(false) != nil {
		return // the referrers API answers; each manifest is asked
	}
	tags := map[string]bool{}
	seen := 0
	err := repo.Tags(ctx, "", func(page []string) error {
		for _, t := range page {
			if strings.HasPrefix(t, "sha256-") {
				tags[t] = true
			}
		}
		if seen += len(page); seen > maxTags {
			return fmt.Errorf("more than %d referrer tags", maxTags)
		}
		return nil
	})
	if err == nil {
		repo.referrerTags = tags
	}
}

// compareTime orders RFC 3339 times; one that does not parse is oldest.
func compareTime(a, b string) int {
	ta, ea := time.Parse(time.RFC3339Nano, a)
	tb, eb := time.Parse(time.RFC3339Nano, b)
	switch {
	case ea != nil && eb != nil:
		return 0
	case ea != nil:
		return -1
	case eb != nil:
		return 1
	}
	return ta.Compare(tb)
}

// fetchSignature returns the bundle of the newest signature referrer of
// the skill manifest d, verified against its digest, or nil when the
// skill is unsigned. meta counts the bundle against maxMeta.
func fetchSignature(ctx context.Context, repo *cachedRepo, ref Ref, d ocispec.Descriptor, name string, meta *atomic.Int64, maxMeta int64) ([]byte, error) {
	if repo.referrerTags != nil && !repo.referrerTags["sha256-"+d.Digest.Encoded()] {
		return nil, nil
	}
	sig, err := newestSignature(ctx, repo, ref, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d.Digest, Size: d.Size}, name)
	if err != nil || sig == nil {
		return nil, err
	}
	if meta.Add(sig.layer.Size) > maxMeta {
		return nil, fmt.Errorf("%s: the manifests, configs and signatures declare more than %d bytes; refused before fetching", ref, maxMeta)
	}
	b, err := content.FetchAll(ctx, repo, sig.layer)
	if err != nil {
		return nil, fmt.Errorf("%s: signature bundle %s of %s: %w; refused", ref, sig.layer.Digest, name, err)
	}
	return b, nil
}
