package ocisource

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/content"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/sigfile"
)

// fetchers is how many requests one Open has in flight.
const fetchers = 16

// Source is the catalog of one OCI reference.
type Source struct {
	ref      Ref
	repo     *cachedRepo
	maxTotal int64
	// maxMetadata bounds the manifests and configs of one reference.
	maxMetadata int64
	log         *slog.Logger

	update sync.Mutex // one Update at a time
	mu     sync.Mutex
	digest string
	cat    *catalog.Catalog
	blobs  map[digest.Digest][]byte        // the current snapshot's verified files
	arts   map[digest.Digest]skillArtifact // and its checked manifests
}

// Catalog returns the catalog built from the reference.
func (s *Source) Catalog() *catalog.Catalog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cat
}

// Digest returns the digest the reference resolved to.
func (s *Source) Digest() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.digest
}

// Ref returns the reference.
func (s *Source) Ref() Ref { return s.ref }

// skillArtifact is one skill manifest, checked, with its config.
type skillArtifact struct {
	where  string // reference and skill path, for errors
	path   string
	digest digest.Digest // of the manifest
	size   int64         // of the manifest
	m      ocispec.Manifest
	sig    []byte // the newest signature referrer's bundle, or nil
	// files holds an archived skill's files (ToolHive's layout) by path
	// relative to the skill; nil when each file is a layer.
	files map[string][]byte
}

// Open resolves ref, fetches its index or manifest and every manifest the
// index lists, checks every declared size against the skill limits, and
// only then fetches the files, verifying each blob's size and sha256. The
// catalog is built from the verified bytes with copts.
func Open(ctx context.Context, ref Ref, o *Options, copts *catalog.Options) (*Source, error) {
	if o == nil {
		o = &Options{}
	}
	src := &Source{ref: ref, maxTotal: o.MaxTotal, maxMetadata: o.MaxMetadata, log: o.Logger}
	if src.maxTotal <= 0 {
		src.maxTotal = DefaultMaxTotal
	}
	if src.maxMetadata <= 0 {
		src.maxMetadata = DefaultMaxMetadata
	}
	if src.log == nil {
		src.log = slog.New(slog.DiscardHandler)
	}
	repo, err := repository(ref, o)
	if err != nil {
		return nil, err
	}
	src.repo = &cachedRepo{Repository: repo, dir: o.CacheDir}
	top, err := src.resolve(ctx)
	if err != nil {
		return nil, err
	}
	tree, blobs, arts, err := src.fetch(ctx, top)
	if err != nil {
		return nil, err
	}
	cat, err := catalog.Open(tree, copts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	src.digest, src.cat, src.blobs, src.arts = top.Digest.String(), cat, blobs, arts
	return src, nil
}

// resolve returns the descriptor the reference names now.
func (s *Source) resolve(ctx context.Context) (ocispec.Descriptor, error) {
	ref, repo := s.ref, s.repo
	top, err := repo.Resolve(ctx, ref.Reference.Reference)
	if err != nil {
		return top, fmt.Errorf("%s: resolving: %w", ref, authHint(ref, err))
	}
	if d, err := ref.Digest(); err == nil && d != top.Digest {
		return top, fmt.Errorf("%s: the registry resolved the digest to %s; refused", ref, top.Digest)
	}
	return top, nil
}

// fetch reads the artifact top names: its manifests, checked, then the
// files the current snapshot does not hold, verified. It returns the tree
// to build a catalog from and the files by digest.
func (s *Source) fetch(ctx context.Context, top ocispec.Descriptor) (fstest.MapFS, map[digest.Digest][]byte, map[digest.Digest]skillArtifact, error) {
	ref, repo, maxTotal := s.ref, s.repo, s.maxTotal
	listReferrerTags(ctx, repo, top)
	s.mu.Lock()
	held, heldArts := s.blobs, s.arts
	s.mu.Unlock()
	var arts []skillArtifact
	switch top.MediaType {
	case ocispec.MediaTypeImageIndex:
		b, err := content.FetchAll(ctx, repo, top)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: fetching the index %s: %w", ref, top.Digest, err)
		}
		var idx ocispec.Index
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: index %s: %v", ref, top.Digest, err)
		}
		if idx.ArtifactType == ToolHiveArtifactType {
			d, err := toolhiveManifest(ref, &idx, top.Digest)
			if err != nil {
				return nil, nil, nil, err
			}
			var meta atomic.Int64
			a, err := fetchSkill(ctx, repo, ref, d, &meta, s.maxMetadata)
			if err != nil {
				return nil, nil, nil, err
			}
			arts = append(arts, a)
			break
		}
		if idx.ArtifactType != CatalogArtifactType {
			return nil, nil, nil, fmt.Errorf("%s: index %s has artifactType %q, not a skill catalog (%s)", ref, top.Digest, idx.ArtifactType, CatalogArtifactType)
		}
		if len(idx.Manifests) > MaxSkills {
			return nil, nil, nil, fmt.Errorf("%s: index lists %d manifests, more than %d", ref, len(idx.Manifests), MaxSkills)
		}
		// What the manifests and configs declare is bounded before any is
		// fetched: each is small, but an index may list many.
		var meta atomic.Int64
		for _, d := range idx.Manifests {
			if d.Size < 0 || meta.Add(d.Size) > s.maxMetadata {
				return nil, nil, nil, fmt.Errorf("%s: the index's manifests declare more than %d bytes; refused before fetching", ref, s.maxMetadata)
			}
		}
		// Manifests and configs are fetched in parallel: each round trip
		// otherwise adds up over a large catalog.
		arts = make([]skillArtifact, len(idx.Manifests))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(fetchers)
		for i, d := range idx.Manifests {
			g.Go(func() (err error) {
				// A manifest is named by its digest: one the served
				// snapshot already checked is the same artifact.
				if a, ok := heldArts[d.Digest]; ok && a.m.Config.Size >= 0 {
					if meta.Add(a.m.Config.Size) > s.maxMetadata {
						return fmt.Errorf("%s: the manifests and configs declare more than %d bytes; refused", a.where, s.maxMetadata)
					}
					arts[i] = a
					return nil
				}
				arts[i], err = fetchSkill(gctx, repo, ref, d, &meta, s.maxMetadata)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, nil, nil, err
		}
		// Two artifacts of one skill path would be served as one skill
		// holding the files of both.
		paths := make(map[string]string, len(arts))
		for _, a := range arts {
			if prev, ok := paths[a.path]; ok {
				return nil, nil, nil, fmt.Errorf("%s: %s and %s both hold the skill %s; refused", ref, prev, a.where, a.path)
			}
			paths[a.path] = a.where
		}
	case ocispec.MediaTypeImageManifest:
		var meta atomic.Int64
		a, err := fetchSkill(ctx, repo, ref, top, &meta, s.maxMetadata)
		if err != nil {
			return nil, nil, nil, err
		}
		arts = append(arts, a)
	default:
		return nil, nil, nil, fmt.Errorf("%s: %s has media type %q, neither an OCI index nor an OCI manifest", ref, top.Digest, top.MediaType)
	}

	// Every size is declared and checked: now the total, then the bytes.
	type want struct {
		desc ocispec.Descriptor
		name string
	}
	blobs := map[digest.Digest]want{}
	var total int64
	for _, a := range arts {
		if a.files != nil {
			continue // fetched with its archive
		}
		for _, l := range a.m.Layers {
			if _, ok := blobs[l.Digest]; ok {
				continue
			}
			if total += l.Size; total > maxTotal {
				return nil, nil, nil, fmt.Errorf("%s: the files total more than %d bytes; refused before fetching", ref, maxTotal)
			}
			blobs[l.Digest] = want{desc: ocispec.Descriptor{MediaType: l.MediaType, Digest: l.Digest, Size: l.Size}, name: path.Join(a.path, l.Annotations[AnnotationTitle])}
		}
	}
	var mu sync.Mutex
	data := make(map[digest.Digest][]byte, len(blobs))
	for d := range blobs {
		if b, ok := held[d]; ok {
			data[d] = b
			delete(blobs, d)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(fetchers)
	for d, w := range blobs {
		g.Go(func() error {
			b, err := content.FetchAll(gctx, repo, w.desc)
			if err != nil {
				return fmt.Errorf("%s: blob %s (%s): %w; the registry's copy is damaged or forged, refused", ref, d, w.name, err)
			}
			mu.Lock()
			data[d] = b
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, nil, err
	}

	// The tree the catalog reads: each skill's files under its path. A
	// nested skill's files appear in both artifacts, with the same bytes.
	tree := fstest.MapFS{}
	when := time.Unix(0, 0)
	for _, a := range arts {
		for rel, b := range a.files {
			tree[path.Join(a.path, rel)] = &fstest.MapFile{Data: b, Mode: 0o444, ModTime: when}
		}
		if a.files != nil {
			continue
		}
		for _, l := range a.m.Layers {
			name := path.Join(a.path, l.Annotations[AnnotationTitle])
			if prev, ok := tree[name]; ok {
				if string(prev.Data) != string(data[l.Digest]) {
					return nil, nil, nil, fmt.Errorf("%s: %s is given different contents by two skills; refused", ref, name)
				}
				continue
			}
			tree[name] = &fstest.MapFile{Data: data[l.Digest], Mode: 0o444, ModTime: when, Sys: blobID(l.Digest)}
		}
		// The bundle where a folder keeps it: the catalog attaches it to
		// the skill, and verify checks it as a signed folder's.
		if a.sig != nil {
			tree[sigfile.Path(a.path)] = &fstest.MapFile{Data: a.sig, Mode: 0o444, ModTime: when}
		}
	}
	// A name that is both a file and a folder ("x" and "x/y") has no
	// tree to stand for.
	for name := range tree {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if _, ok := tree[dir]; ok {
				return nil, nil, nil, fmt.Errorf("%s: %s is a file and also the folder of %s; refused", ref, dir, name)
			}
		}
	}
	byDigest := make(map[digest.Digest]skillArtifact, len(arts))
	for _, a := range arts {
		byDigest[a.digest] = a
	}
	return tree, data, byDigest, nil
}

// blobID lets a later catalog of the same files reuse their digests
// (catalog.ContentIdentifier).
type blobID string

// ContentID is the blob digest.
func (b blobID) ContentID() string { return string(b) }

// fetchSkill fetches and checks one skill manifest and its config.
// meta counts the metadata bytes declared so far against maxMeta.
func fetchSkill(ctx context.Context, repo *cachedRepo, ref Ref, d ocispec.Descriptor, meta *atomic.Int64, maxMeta int64) (skillArtifact, error) {
	where := fmt.Sprintf("%s: manifest %s", ref, d.Digest)
	if d.MediaType != ocispec.MediaTypeImageManifest {
		return skillArtifact{}, fmt.Errorf("%s: media type %q is not an OCI manifest", where, d.MediaType)
	}
	b, err := content.FetchAll(ctx, repo, d)
	if err != nil {
		return skillArtifact{}, fmt.Errorf("%s: %w", where, err)
	}
	var a skillArtifact
	if err := json.Unmarshal(b, &a.m); err != nil {
		return skillArtifact{}, fmt.Errorf("%s: %v", where, err)
	}
	if a.m.ArtifactType == ToolHiveArtifactType {
		return readToolHive(ctx, repo, ref, d, &a.m, where, meta, maxMeta)
	}
	if p := a.m.Annotations[AnnotationPath]; p != "" {
		where += " (" + p + ")"
	}
	if err := checkManifest(&a.m, where); err != nil {
		return skillArtifact{}, err
	}
	if meta.Add(a.m.Config.Size) > maxMeta {
		return skillArtifact{}, fmt.Errorf("%s: the manifests and configs declare more than %d bytes; refused before fetching", where, maxMeta)
	}
	// The manifest names the skill path: the config, which only repeats
	// it beside the frontmatter for registry interfaces, is a round trip
	// per skill saved. A manifest without the annotation is read from
	// its config.
	cfg := Config{Path: a.m.Annotations[AnnotationPath]}
	from := "annotation " + AnnotationPath
	if cfg.Path == "" {
		cb, err := content.FetchAll(ctx, repo, a.m.Config)
		if err != nil {
			return skillArtifact{}, fmt.Errorf("%s: config %s: %w", where, a.m.Config.Digest, err)
		}
		if err := json.Unmarshal(cb, &cfg); err != nil {
			return skillArtifact{}, fmt.Errorf("%s: config %s: %v", where, a.m.Config.Digest, err)
		}
		from = "config " + a.m.Config.Digest.String()
	}
	if !fs.ValidPath(cfg.Path) || cfg.Path == "." || strings.HasPrefix(cfg.Path, ".") {
		return skillArtifact{}, fmt.Errorf("%s: %s: skill path %q is not a relative slash-separated path", where, from, cfg.Path)
	}
	a.path, a.where, a.digest, a.size = cfg.Path, where, d.Digest, d.Size
	if a.sig, err = fetchSignature(ctx, repo, ref, d, cfg.Path, meta, maxMeta); err != nil {
		return skillArtifact{}, err
	}
	return a, nil
}
