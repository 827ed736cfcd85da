package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/ocisource"
	"github.com/skillport/skillport/internal/registry"
	"github.com/skillport/skillport/internal/sigfile"
	"github.com/skillport/skillport/internal/signature"
	"github.com/skillport/skillport/wire"
)

// keyPasswordEnvs are the environment variables a key's passphrase is
// read from, ours first, then cosign's: never a flag, which other users
// see in the process list.
var keyPasswordEnvs = []string{"SKILLPORT_KEY_PASSWORD", "COSIGN_PASSWORD"}

func init() {
	var keyFile string
	cmd := &cobra.Command{
		Use:   "sign (--key FILE | --keyless) DIR",
		Short: "Sign every skill of a folder with a private key or keylessly (Sigstore bundles)",
		Long: `sign builds DIR's catalog as skillport serve DIR publishes it, and writes
one Sigstore bundle per skill to DIR/.skillport/signatures/<skill dir>.sigstore.json
(a dot-folder, never served as a skill file; serve attaches each bundle to
its skill's entry under _meta "io.skillport/signature").

DIR may be oci://REGISTRY/REPOSITORY[:TAG|@DIGEST], written by push: each
skill is signed as the reference serves it, and the bundle is attached as a
Sigstore bundle referrer of the skill's artifact (docs/oci.md).

What is signed is the skill's complete resource set: its URI, every file's
URI, digest and size, and its frontmatter (docs/signing.md). Sign again
after any change: a changed skill's old bundle no longer verifies.

--key is a PEM private key file, ECDSA P-256 or Ed25519, plain (PKCS#8 or
SEC 1) or encrypted as cosign generate-key-pair writes it; the passphrase
comes from $SKILLPORT_KEY_PASSWORD or $COSIGN_PASSWORD.

--keyless signs without a long-lived key, as cosign does: an ephemeral key,
a certificate from Fulcio for the identity of an OIDC ID token, and an entry
in the Rekor transparency log (public, with the default --rekor-url). The ID
token comes from --oidc-token-file FILE, else $SIGSTORE_ID_TOKEN, else
GitHub Actions (a job with "permissions: id-token: write"). Without --key,
sign signs keylessly when such a token is found, and says so. The identity
that signed is printed; hosts name it in a trust policy (docs/signing.md).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("sign: name one skill folder, e.g. skillport sign --key cosign.key ./skills")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := chooseSigner(cmd, "sign", "key", true)
			if err != nil {
				return err
			}
			if s == nil {
				return usageErrorf("sign: give --key FILE (a PEM private key file; the key itself is never a flag value), or --keyless with an OIDC ID token (--oidc-token-file FILE, $%s, or GitHub Actions)", signature.EnvIDToken)
			}
			return runSignWith(cmd.OutOrStdout(), s, args[0])
		},
	}
	cmd.Flags().StringVar(&keyFile, "key", "", "PEM private key `FILE` (ECDSA P-256 or Ed25519; cosign's encrypted format with $SKILLPORT_KEY_PASSWORD)")
	keylessFlags(cmd.Flags())
	rootCmd.AddCommand(cmd)
}

// loadSigner reads the private key of cmd's flag (sign --key, publish
// --sign-key), its passphrase from the environment.
func loadSigner(cmd, flag, keyFile string) (*signature.Signer, error) {
	pemBytes, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, usageErrorf("%s: %s: %v", cmd, flag, err)
	}
	var pass []byte
	for _, env := range keyPasswordEnvs {
		if p, ok := os.LookupEnv(env); ok {
			pass = []byte(p)
			break
		}
	}
	s, err := signature.LoadSigner(pemBytes, pass)
	if err != nil {
		return nil, usageErrorf("%s: %s %s: %v", cmd, flag, esc(keyFile), err)
	}
	return s, nil
}

// runSign signs dir with the key in keyFile.
func runSign(stdout io.Writer, keyFile, dir string) error {
	s, err := loadSigner("sign", "--key", keyFile)
	if err != nil {
		return err
	}
	return runSignWith(stdout, s, dir)
}

// runSignWith signs every skill of dir (a folder or oci:// reference) with s.
func runSignWith(stdout io.Writer, s skillSigner, dir string) error {
	if ocisource.IsSpec(dir) {
		return signOCI(stdout, s, dir)
	}
	c, err := catalog.OpenDir(dir, &catalog.Options{})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("sign: %w", err)}
	}
	defer c.Close()
	n := 0
	for _, sk := range c.Skills() {
		if len(sk.Files) == 0 {
			continue // a dynamic skill has no resource set to sign
		}
		b, err := s.Sign(registry.SignedSet(sk))
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("sign: %s: %w", esc(sk.URI), err)}
		}
		out := filepath.Join(dir, filepath.FromSlash(sigfile.Path(sk.Dir)))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("sign: %w", err)}
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("sign: %w", err)}
		}
		n++
	}
	fmt.Fprintf(stdout, "signed %s %s into %s\n", count(n, "skill", "skills"), esc(signedBy(s)), esc(filepath.Join(dir, filepath.FromSlash(sigfile.Dir))))
	return nil
}

// signParts prepares the signatures a publish stores with new versions.
// With a signer (--sign-key, --keyless), every skill is signed as the
// registry serves it (its path under the prefix). Without, bundles
// committed in the source are kept when they match the skill as
// published, and dropped with a warning otherwise (made before a --prefix
// moved the skill): a stored bundle that can never verify would only make
// hosts refuse the skill.
func signParts(stderr io.Writer, parts []registry.Part, s skillSigner) error {
	for _, p := range parts {
		for _, sk := range p.Catalog.Skills() {
			switch {
			case len(sk.Files) == 0:
				continue
			case s != nil:
				b, err := s.Sign(registry.SignedSet(sk))
				if err != nil {
					return &exitError{code: 1, err: fmt.Errorf("publish: %s: %w", esc(sk.URI), err)}
				}
				sk.Signature = b
			case len(sk.Signature) > 0:
				if _, err := signature.Inspect(registry.SignedSet(sk), sk.Signature); err != nil {
					fmt.Fprintf(stderr, "skillport: publish: %s: its committed signature is not stored: %s; sign at publish with --sign-key\n", esc(sk.URI), esc(err.Error()))
					sk.Signature = nil
				}
			}
		}
	}
	return nil
}

// entrySet is the resource set of a skill as a server listed it.
func entrySet(e *host.Entry) *signature.Set {
	set := &signature.Set{URI: e.URI, Frontmatter: e.Frontmatter.JSON()}
	for _, f := range e.Files {
		set.Resources = append(set.Resources, signature.Resource{URI: f.URI, Digest: f.Digest, Size: f.Size})
	}
	return set
}

// trustFlag is --trusted-key and --trust-policy: who may sign the skills
// of each origin (docs/signing.md). It is applied by the host to every
// listing (host.Options.Trust), so ls, verify, pull, load, install and
// the gateway refuse the same skills for the same reasons.
type trustFlag struct {
	keys       []string
	policyFile string
	policy     *signature.Policy
}

func (t *trustFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&t.keys, "trusted-key", nil, "PEM public key `FILE` every skill must be signed by (repeatable); unsigned skills and other signers are refused")
	cmd.Flags().StringVar(&t.policyFile, "trust-policy", "", "trust policy `FILE`: per origin, the keys or keyless identities allowed to sign its skills (docs/signing.md)")
}

// load reads the trusted keys or the policy, once the flags are parsed.
func (t *trustFlag) load(name string) error {
	t.policy = nil // a command run again in-process starts from its flags
	switch {
	case len(t.keys) > 0 && t.policyFile != "":
		return usageErrorf("%s: give --trusted-key or --trust-policy, not both (a policy file names keys per origin, or for \"*\")", name)
	case t.policyFile != "":
		p, err := loadPolicy(name, "--trust-policy", t.policyFile)
		if err != nil {
			return err
		}
		t.policy = p
	case len(t.keys) > 0:
		var keys [][]byte
		for _, f := range t.keys {
			b, err := readBounded(f, signature.MaxPolicyBytes)
			if err != nil {
				return usageErrorf("%s: --trusted-key: %v", name, err)
			}
			keys = append(keys, b)
		}
		p, err := signature.KeysPolicy(keys)
		if err != nil {
			return usageErrorf("%s: --trusted-key: %v", name, err)
		}
		t.policy = p
	}
	return nil
}

// loadPolicy reads the trust policy file of flag (--trust-policy, serve
// --require-signed-publish), and the key and trusted-root files it names,
// relative to it.
func loadPolicy(name, flag, file string) (*signature.Policy, error) {
	data, err := readBounded(file, signature.MaxPolicyBytes)
	if err != nil {
		return nil, usageErrorf("%s: %s: %v", name, flag, err)
	}
	dir := filepath.Dir(file)
	p, err := signature.ParsePolicy(data, func(path string) ([]byte, error) {
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, filepath.FromSlash(path))
		}
		return readBounded(path, signature.MaxPolicyBytes)
	})
	if err != nil {
		return nil, usageErrorf("%s: %s %s: %v", name, flag, esc(file), err)
	}
	return p, nil
}

// readBounded reads a small file the user named, refusing one over max.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is over the %d-byte limit", esc(path), max)
	}
	return b, nil
}

// hook is the host's Trust option. With a policy, an unsigned skill, a
// bad signature or a signer the policy does not allow for the origin is
// refused. Without one, a signature's binding to the skill is still
// checked (a mismatch is refused) and its signer reported, never
// silently ignored; its cryptography needs the key or trusted root.
func (t *trustFlag) hook() func(host.Origin, []*host.Entry) []error {
	p := t.policy
	// A host lists a server again on every change; the bundles of the
	// skills that did not change are decoded once.
	var insp signature.Inspector
	return func(o host.Origin, entries []*host.Entry) []error {
		errs := make([]error, len(entries))
		if p == nil {
			for i, e := range entries {
				if len(e.Signature) == 0 {
					continue
				}
				id, err := insp.Inspect(entrySet(e), e.Signature)
				if err != nil {
					errs[i] = fmt.Errorf("signature invalid: %w", err)
					continue
				}
				e.SignatureNote = fmt.Sprintf("signed by %s (not checked: pass --trusted-key or --trust-policy)", id)
			}
			return errs
		}
		v := p.For(o.Label)
		var sets []*signature.Set
		var bundles [][]byte
		var at []int
		for i, e := range entries {
			switch {
			case v == nil:
				errs[i] = fmt.Errorf("the trust policy names no signer for origin %s (add it, or \"*\")", o.Label)
			case len(e.Signature) == 0:
				errs[i] = errors.New("unsigned: the server sent no " + sigMetaKey + " signature, and the trust policy requires one")
			default:
				sets, bundles, at = append(sets, entrySet(e)), append(bundles, e.Signature), append(at, i)
			}
		}
		if len(sets) == 0 {
			return errs
		}
		for j, r := range v.VerifyAll(sets, bundles) {
			e := entries[at[j]]
			if r.Err != nil {
				errs[at[j]] = fmt.Errorf("signature refused: %w", r.Err)
				continue
			}
			e.Signer = r.Signer.Ref()
			e.SignatureNote = "signature verified: signed by " + r.Signer.String()
		}
		return errs
	}
}

// untrusted calls refused for each skill the trust policy refused (the
// host left it out, with a diagnostic naming it): for the commands that
// act on every skill of a source, such a skill is a failure, not silently
// missing.
func untrusted(h *host.Host, refused func(origin, uri, msg string)) {
	for _, d := range h.Diagnostics() {
		if d.Refused && errors.Is(d.Err, host.ErrUntrusted) {
			refused(d.Origin, d.URI, d.Message)
		}
	}
}

// refusedSkill returns why the trust policy refused the skill named name
// (NAME, ORIGIN:NAME or its path), "" when it did not: a skill left out
// for its signature is not "unknown".
func refusedSkill(h *host.Host, name string) string {
	msg := ""
	untrusted(h, func(origin, uri, m string) {
		path := skillPathOf(uri)
		base := path[strings.LastIndex(path, "/")+1:]
		for _, n := range []string{path, base, origin + ":" + path, origin + ":" + base} {
			if n == name {
				msg = m
			}
		}
	})
	return msg
}

// skillPathOf is the skill path of a SKILL.md URI.
func skillPathOf(uri string) string {
	return strings.TrimSuffix(strings.TrimPrefix(uri, "skill://"), "/SKILL.md")
}

var sigMetaKey = `_meta "` + wire.MetaSignature + `"`
