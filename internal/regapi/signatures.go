package regapi

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/internal/sigfile"
	"github.com/skillport/skillport/internal/signature"
)

// errSignature marks a signature bundle sent with a publish that the
// replica refuses: the client's fault (422).
var errSignature = errors.New("signature refused")

// checkSignatures refuses a publish whose bundles are not exactly
// signatures of the skills published. The bundles travel in the archive
// where a source tree keeps them (sigfile.Path of each skill's
// directory), and cat, opened on the unpacked tree dir, has read them.
// Each must be the bundle of a skill of the archive, at most
// sigfile.MaxBytes, and bind to that skill's resource set as the
// registry will serve it (its path under the namespace, its files'
// digests and sizes, its frontmatter): a bundle that cannot verify for
// the content is never stored. Who signed is the hosts' trust policy's
// question (a key-based bundle names its key by a hint only), unless the
// replica requires signers: then every skill of namespace ns must verify
// under required (see [Options.RequireSigned]).
func checkSignatures(dir string, cat *catalog.Catalog, ns string, required *signature.Policy) error {
	byPath := map[string]*catalog.Skill{}
	byDir := map[string]*catalog.Skill{}
	for _, sk := range cat.Skills() {
		byPath[sigfile.Path(sk.Dir)] = sk
		byDir[sk.Dir] = sk
	}
	err := fs.WalkDir(os.DirFS(dir), sigfile.Dir, func(p string, d fs.DirEntry, err error) error {
		if p == sigfile.Dir && errors.Is(err, fs.ErrNotExist) {
			return fs.SkipAll // an unsigned publish
		}
		if err != nil || d.IsDir() {
			return err
		}
		sk := byPath[p]
		if sk == nil {
			return fmt.Errorf("regapi: %s: %w: it is the bundle of no skill of the archive (a skill's bundle is %s/<skill directory>.sigstore.json); send only the bundles of the skills published", p, errSignature, sigfile.Dir)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > sigfile.MaxBytes {
			return fmt.Errorf("regapi: %s: %w: its bundle %s is %d bytes, over the %d-byte limit of a signature bundle", sk.URI, errSignature, p, info.Size(), sigfile.MaxBytes)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// A bundle the catalog could not attach (not JSON) is refused, not
	// dropped: the publisher meant the skill to be signed.
	for _, d := range cat.Diagnostics() {
		if d.Rule == catalog.RuleSignature {
			name := d.Path
			if sk := byDir[d.Skill]; sk != nil {
				name = sk.URI
			}
			return fmt.Errorf("regapi: %s: %w: %s", name, errSignature, d.Message)
		}
	}
	var v *signature.Verifier
	if required != nil {
		label, _, _ := strings.Cut(ns, "/")
		if v = required.For(label); v == nil {
			return fmt.Errorf("regapi: namespace %q: %w: this replica requires signed publishes, and its policy (--require-signed-publish) names no signer for %q nor \"*\"", ns, errSignature, label)
		}
	}
	for _, sk := range cat.Skills() {
		if len(sk.Files) == 0 {
			continue
		}
		if v != nil {
			if len(sk.Signature) == 0 {
				return fmt.Errorf("regapi: %s: %w: unsigned, and this replica requires signed publishes in namespace %q; publish with --sign-key FILE or --keyless", sk.URI, errSignature, ns)
			}
			if _, err := v.Verify(registry.SignedSet(sk), sk.Signature); err != nil {
				return fmt.Errorf("regapi: %s: %w: %v (this replica requires signed publishes in namespace %q)", sk.URI, errSignature, err, ns)
			}
			continue
		}
		if len(sk.Signature) == 0 {
			continue
		}
		if _, err := signature.Inspect(registry.SignedSet(sk), sk.Signature); err != nil {
			return fmt.Errorf("regapi: %s: %w: its bundle %s does not bind to the skill published: %v; sign it at publish (--sign-key or --keyless)", sk.URI, errSignature, sigfile.Path(sk.Dir), err)
		}
	}
	return nil
}
