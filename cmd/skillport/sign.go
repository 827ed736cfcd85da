package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/ocisource"
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
		Use:   "sign --key FILE DIR",
		Short: "Sign every skill of a folder with a private key (Sigstore bundles)",
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
comes from $SKILLPORT_KEY_PASSWORD or $COSIGN_PASSWORD.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("sign: name one skill folder, e.g. skillport sign --key cosign.key ./skills")
			}
			if keyFile == "" {
				return usageErrorf("sign: --key FILE is required (a PEM private key file; the key itself is never a flag value)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSign(cmd.OutOrStdout(), keyFile, args[0])
		},
	}
	cmd.Flags().StringVar(&keyFile, "key", "", "PEM private key `FILE` (ECDSA P-256 or Ed25519; cosign's encrypted format with $SKILLPORT_KEY_PASSWORD)")
	rootCmd.AddCommand(cmd)
}

func loadSigner(keyFile string) (*signature.Signer, error) {
	pemBytes, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, usageErrorf("sign: --key: %v", err)
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
		return nil, usageErrorf("sign: --key %s: %v", esc(keyFile), err)
	}
	return s, nil
}

func runSign(stdout io.Writer, keyFile, dir string) error {
	s, err := loadSigner(keyFile)
	if err != nil {
		return err
	}
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
		b, err := s.Sign(catalogSet(sk))
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
	fmt.Fprintf(stdout, "signed %s with key %s into %s\n", count(n, "skill", "skills"), s.KeyID()[:16], esc(filepath.Join(dir, filepath.FromSlash(sigfile.Dir))))
	return nil
}

// catalogSet is the resource set of a skill as serve publishes it.
func catalogSet(sk *catalog.Skill) *signature.Set {
	set := &signature.Set{URI: sk.URI, Frontmatter: sk.Frontmatter.JSON()}
	for _, f := range sk.Files {
		set.Resources = append(set.Resources, signature.Resource{URI: f.URI, Digest: f.Digest, Size: f.Size})
	}
	return set
}

// entrySet is the resource set of a skill as a server listed it.
func entrySet(e *host.Entry) *signature.Set {
	set := &signature.Set{URI: e.URI, Frontmatter: e.Frontmatter.JSON()}
	for _, f := range e.Files {
		set.Resources = append(set.Resources, signature.Resource{URI: f.URI, Digest: f.Digest, Size: f.Size})
	}
	return set
}

// trustFlag is --trusted-key: the public keys a skill must be signed by.
type trustFlag struct {
	files    []string
	verifier *signature.Verifier
}

func (t *trustFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&t.files, "trusted-key", nil, "PEM public key `FILE` a skill must be signed by (repeatable); unsigned skills and other signers are refused")
}

// load reads the trusted keys, once the flags are parsed.
func (t *trustFlag) load(name string) error {
	t.verifier = nil // a command run again in-process starts from its flags
	if len(t.files) == 0 {
		return nil
	}
	var keys [][]byte
	for _, f := range t.files {
		b, err := os.ReadFile(f)
		if err != nil {
			return usageErrorf("%s: --trusted-key: %v", name, err)
		}
		keys = append(keys, b)
	}
	v, err := signature.LoadVerifier(keys...)
	if err != nil {
		return usageErrorf("%s: --trusted-key: %v", name, err)
	}
	t.verifier = v
	return nil
}

// check applies the trust policy to an entry whose files were verified
// against its digests. It returns what to report and whether the skill
// is refused. Without trusted keys a signature's binding to the skill is
// still checked and reported, never silently ignored; the signature's
// cryptography needs the key.
func (t *trustFlag) check(e *host.Entry) (note string, refused bool) {
	switch {
	case len(e.Signature) == 0 && t.verifier != nil:
		return "unsigned: the server sent no " + sigMetaKey + " signature, and --trusted-key requires one", true
	case len(e.Signature) == 0:
		return "", false // unsigned, no policy: the output is as before signatures
	case t.verifier != nil:
		if err := t.verifier.Verify(entrySet(e), e.Signature); err != nil {
			return "signature refused: " + esc(err.Error()), true
		}
		return "signature verified", false
	}
	id, err := signature.Inspect(entrySet(e), e.Signature)
	if err != nil {
		return "signature invalid: " + esc(err.Error()), true
	}
	return fmt.Sprintf("signed by key %.16s (not checked: pass --trusted-key with its public key)", esc(id)), false
}

var sigMetaKey = `_meta "` + wire.MetaSignature + `"`
