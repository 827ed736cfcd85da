// Package ocisource publishes skills as OCI artifacts and reads them back:
// [Push] writes a catalog to a registry, one artifact per skill plus an
// index over them; [Open] builds a catalog from an oci:// reference. The
// layout is documented in docs/oci.md.
package ocisource

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"

	"github.com/skillport/skillport/internal/ociref"
)

// Media types and annotations of the layout (docs/oci.md).
const (
	// ArtifactType marks a manifest holding one skill.
	ArtifactType = "application/vnd.skillport.skill.v1"
	// CatalogArtifactType marks an index over skill manifests.
	CatalogArtifactType = "application/vnd.skillport.catalog.v1"
	// ConfigMediaType is the media type of a skill manifest's config blob,
	// a JSON [Config].
	ConfigMediaType = "application/vnd.skillport.skill.config.v1+json"
	// FileMediaType is the media type of every layer: one file of the
	// skill, its bytes verbatim, so the layer digest is the file's sha256.
	FileMediaType = "application/vnd.skillport.skill.file.v1"
	// AnnotationPath names the skill path on a manifest and on its entry
	// in the index.
	AnnotationPath = "io.skillport.skill.path"
	// AnnotationTitle (org.opencontainers.image.title) names a layer's
	// file, relative to the skill's folder.
	AnnotationTitle = ocispec.AnnotationTitle
)

// Bounds of what is read before anything is trusted.
const (
	// maxConfig is the largest config blob read: a frontmatter and a path.
	maxConfig = 1 << 20
	// MaxSkills is the most skills an index may list.
	MaxSkills = 100_000
	// DefaultMaxTotal is the most bytes of files fetched for one
	// reference, unless Options.MaxTotal says otherwise.
	DefaultMaxTotal = 1 << 30
	// DefaultMaxMetadata is the most bytes of manifests and configs read
	// for one reference, unless Options.MaxMetadata says otherwise.
	DefaultMaxMetadata = 256 << 20
)

// Config is the config blob of a skill manifest. SKILL.md (a layer) is
// authoritative; the frontmatter is repeated here for registries and tools
// that show an artifact without fetching its layers.
type Config struct {
	// Path is the skill path, e.g. "acme/pdf"; its files are served under it.
	Path string `json:"path"`
	// Frontmatter is the SKILL.md frontmatter as JSON.
	Frontmatter json.RawMessage `json:"frontmatter,omitempty"`
}

// Scheme starts every OCI source argument.
const Scheme = ociref.Scheme

// IsSpec reports whether s names an OCI source (oci://…).
func IsSpec(s string) bool { return ociref.IsSpec(s) }

// Ref is a parsed oci://REGISTRY/REPOSITORY[:TAG|@sha256:…].
type Ref struct {
	registry.Reference
}

// ParseRef parses an oci:// reference (the grammar of package ociref,
// which a host checks with). A reference without tag or digest names the
// tag "latest".
func ParseRef(s string) (Ref, error) {
	if _, err := ociref.Parse(s); err != nil {
		return Ref{}, err
	}
	r, err := registry.ParseReference(strings.TrimPrefix(s, Scheme))
	if err != nil {
		return Ref{}, fmt.Errorf("%s: %v; write oci://REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST]", s, err)
	}
	if r.Reference == "" {
		r.Reference = "latest"
	}
	return Ref{r}, nil
}

// String returns the reference with its oci:// scheme.
func (r Ref) String() string { return Scheme + r.Reference.String() }

// Pinned reports whether the reference is a digest, which never moves.
func (r Ref) Pinned() bool {
	_, err := r.Digest()
	return err == nil
}

// loopback reports whether host (with or without port) is a loopback
// address, the only place plain HTTP is used without being asked for.
func loopback(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// checkManifest checks a skill manifest's declared shape and sizes
// against the skill limits, before any of its blobs is fetched.
func checkManifest(m *ocispec.Manifest, where string) error {
	if m.ArtifactType != ArtifactType {
		return fmt.Errorf("%s: artifactType %q is not a skill (%s)", where, m.ArtifactType, ArtifactType)
	}
	if m.Config.MediaType != ConfigMediaType {
		return fmt.Errorf("%s: config media type %q, want %s", where, m.Config.MediaType, ConfigMediaType)
	}
	if m.Config.Size < 0 || m.Config.Size > maxConfig {
		return fmt.Errorf("%s: config blob of %d bytes exceeds %d", where, m.Config.Size, maxConfig)
	}
	if len(m.Layers) == 0 {
		return fmt.Errorf("%s: no layers (a skill has at least SKILL.md)", where)
	}
	if len(m.Layers) > maxFiles {
		return fmt.Errorf("%s: %d files exceed the skill limit of %d", where, len(m.Layers), maxFiles)
	}
	var total int64
	seen := map[string]bool{}
	for _, l := range m.Layers {
		title := l.Annotations[AnnotationTitle]
		if l.MediaType != FileMediaType {
			return fmt.Errorf("%s: layer %s (%q) has media type %q, want %s", where, l.Digest, title, l.MediaType, FileMediaType)
		}
		if err := l.Digest.Validate(); err != nil || l.Digest.Algorithm() != "sha256" {
			return fmt.Errorf("%s: layer %q: digest %q is not sha256:<64 hex digits>", where, title, l.Digest)
		}
		if !fs.ValidPath(title) || title == "." {
			return fmt.Errorf("%s: layer %s: title %q is not a relative slash-separated file path", where, l.Digest, title)
		}
		if seen[title] {
			return fmt.Errorf("%s: layer %s: file %q appears twice", where, l.Digest, title)
		}
		seen[title] = true
		if l.Size < 0 || l.Size > maxBytes-total {
			return fmt.Errorf("%s: layer %s (%s) declares %d bytes: the skill's files would exceed the limit of %d bytes; refused before fetching", where, l.Digest, title, l.Size, maxBytes)
		}
		total += l.Size
	}
	return nil
}
