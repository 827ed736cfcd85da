package ocisource

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// DefaultCacheDir is where the command line keeps fetched blobs unless
// told otherwise: skillport/oci under the user cache directory.
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("ocisource: no user cache directory (%v); set --cache-dir", err)
	}
	return filepath.Join(d, "skillport", "oci"), nil
}

// cachedRepo is a registry repository whose manifests and blobs, named by
// digest and so immutable, are kept in a local content-addressed folder:
// a restart fetches only what it does not hold. Tags and referrers, which
// move, always go to the registry.
type cachedRepo struct {
	*remote.Repository
	dir string // "" keeps nothing
	// referrerTags, when the registry lists referrers through the tag
	// schema, holds its sha256-<hex> tags: a manifest without one has no
	// referrer to ask for. nil asks for every manifest's.
	referrerTags map[string]bool
}

// path is where the blob d is kept: DIR/blobs/ALGORITHM/HEX, as in an OCI
// image layout.
func (r *cachedRepo) path(d digest.Digest) string {
	return filepath.Join(r.dir, "blobs", d.Algorithm().String(), d.Encoded())
}

// Fetch serves desc from the cache when it holds the bytes desc names
// (size and digest checked on every read: a damaged file is a miss, and is
// replaced), else from the registry, keeping what verified.
func (r *cachedRepo) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if r.dir == "" || desc.Digest.Validate() != nil {
		return r.Repository.Fetch(ctx, desc)
	}
	p := r.path(desc.Digest)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == desc.Size {
		if b, err := os.ReadFile(p); err == nil && int64(len(b)) == desc.Size && verified(desc.Digest, b) {
			return io.NopCloser(bytes.NewReader(b)), nil
		}
	}
	b, err := content.FetchAll(ctx, r.Repository, desc)
	if err != nil {
		return nil, err
	}
	// A cache that cannot be written is only slower.
	_ = r.keep(p, b)
	return io.NopCloser(bytes.NewReader(b)), nil
}

// verified reports whether b is the content d names.
func verified(d digest.Digest, b []byte) bool {
	v := d.Verifier()
	v.Write(b)
	return v.Verified()
}

// keep writes b to p through a temporary file and a rename, so that a
// reader never sees half a blob.
func (r *cachedRepo) keep(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("caching %s: %v %v", p, werr, cerr)
	}
	return os.Rename(f.Name(), p)
}
