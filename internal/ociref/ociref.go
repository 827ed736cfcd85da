// Package ociref parses OCI source references
// (oci://REGISTRY/REPOSITORY[:TAG|@sha256:…]) without importing a registry
// client, so that a host can tell and check an OCI source without building
// oras into its importers (package ocisource reads the source).
package ociref

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Scheme starts every OCI source.
const Scheme = "oci://"

// MaxLength bounds a reference; longer ones are refused.
const MaxLength = 4096

// ErrBadRef is wrapped by every error of [Parse].
var ErrBadRef = errors.New("bad OCI reference")

// Ref is a parsed oci://REGISTRY/REPOSITORY[:TAG|@DIGEST].
type Ref struct {
	// Registry is the host and optional port: "ghcr.io", "127.0.0.1:5000".
	Registry string
	// Repository is the slash-separated repository: "acme/skills".
	Repository string
	// Tag is the tag; "latest" when neither a tag nor a digest is given.
	Tag string
	// Digest is "algorithm:hex" when the reference is pinned, else "".
	Digest string
}

// The grammar of distribution's reference package (the OCI distribution
// specification's names, tags and digests).
var (
	hostRE   = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])(?::[0-9]{1,5})?$`)
	repoRE   = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$`)
	tagRE    = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$|^sha512:[a-f0-9]{128}$`)
)

// IsSpec reports whether s is meant as an OCI source (starts with oci://),
// so that callers can tell it from a directory before parsing it.
func IsSpec(s string) bool { return strings.HasPrefix(s, Scheme) }

// Parse parses oci://REGISTRY/REPOSITORY[:TAG][@DIGEST]. Errors say what
// to write instead.
func Parse(s string) (Ref, error) {
	bad := func(format string, args ...any) (Ref, error) {
		return Ref{}, fmt.Errorf("%w %q: %s; write oci://REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST]", ErrBadRef, s, fmt.Sprintf(format, args...))
	}
	if len(s) > MaxLength {
		return Ref{}, fmt.Errorf("%w: longer than %d bytes", ErrBadRef, MaxLength)
	}
	if !IsSpec(s) {
		return bad("an OCI source starts with %s (e.g. oci://ghcr.io/acme/skills:v1)", Scheme)
	}
	rest := s[len(Scheme):]
	host, path, ok := strings.Cut(rest, "/")
	if !ok || path == "" {
		return bad("no repository after the registry")
	}
	if !hostRE.MatchString(host) {
		return bad("registry %q is not a host name or address with an optional port", host)
	}
	var r Ref
	r.Registry = host
	if p, d, ok := strings.Cut(path, "@"); ok {
		if !digestRE.MatchString(d) {
			return bad("digest %q is not sha256:<64 lowercase hex digits>", d)
		}
		path, r.Digest = p, d
	}
	// A tag follows the last ":" of the last path segment (a registry port
	// is already cut off with the host).
	if i := strings.LastIndexByte(path, ':'); i > strings.LastIndexByte(path, '/') {
		path, r.Tag = path[:i], path[i+1:]
		if !tagRE.MatchString(r.Tag) {
			return bad("tag %q must be letters, digits, '_', '.' and '-' (at most 128, not starting with '.' or '-')", r.Tag)
		}
	}
	if !repoRE.MatchString(path) || len(path) > 255 {
		return bad("repository %q must be lowercase letters and digits, separated by '.', '_', '-' or '/'", path)
	}
	r.Repository = path
	if r.Tag == "" && r.Digest == "" {
		r.Tag = "latest"
	}
	return r, nil
}

// Pinned reports whether the reference names a digest, which never moves.
func (r Ref) Pinned() bool { return r.Digest != "" }

// String returns the reference in its canonical form, with the oci:// scheme.
func (r Ref) String() string {
	s := Scheme + r.Registry + "/" + r.Repository
	if r.Digest != "" {
		return s + "@" + r.Digest
	}
	return s + ":" + r.Tag
}
