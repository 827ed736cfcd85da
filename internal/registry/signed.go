package registry

import (
	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/signature"
)

// SignedSet is the resource set of sk as a server lists it (its URI,
// every file's URI, digest and size, its frontmatter): what a signature
// of sk binds (docs/signing.md). A publish signs it, and a replica
// checks a bundle sent with a publish over HTTP against it.
func SignedSet(sk *catalog.Skill) *signature.Set {
	set := &signature.Set{URI: sk.URI, Frontmatter: sk.Frontmatter.JSON()}
	for _, f := range sk.Files {
		set.Resources = append(set.Resources, signature.Resource{URI: f.URI, Digest: f.Digest, Size: f.Size})
	}
	return set
}
