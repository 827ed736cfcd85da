package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/ocisource"
	"github.com/skillport/skillport/internal/published"
	"github.com/skillport/skillport/internal/registry"
)

func init() {
	var plainHTTP bool
	var signKey, format string
	cmd := &cobra.Command{
		Use:   "push SOURCE oci://REGISTRY/REPOSITORY[:TAG]",
		Short: "Publish a skill folder to an OCI registry",
		Long: `push writes every skill under SOURCE (a folder, as serve and validate take it)
to an OCI registry: one artifact per skill, each file one layer whose digest
is the file's sha256, and an index over them under TAG (default latest). A
folder that is itself one skill is pushed as that artifact alone. Blobs the
registry already holds are not uploaded again. The layout is in docs/oci.md.

Credentials come from $` + ocisource.EnvUsername + ` and $` + ocisource.EnvPassword + `, or else from
the Docker configuration file and its credential helpers (docker login).
The registry is reached over HTTPS; plain HTTP only on a loopback address
or with --plain-http.

Each skill's signature travels as an OCI referrer of its artifact, in the
Sigstore bundle layout cosign reads: the bundles skillport sign wrote into
the folder, or, with --sign-key FILE, bundles made at push time with that
key (its passphrase from $SKILLPORT_KEY_PASSWORD or $COSIGN_PASSWORD), or
with --keyless, keyless bundles (as skillport sign --keyless).

--format toolhive writes ToolHive's layout instead (thv skill install reads
it): one skill per reference, its files in one tar+gzip layer, an index over
linux/amd64 and linux/arm64 manifests. Serve and the host commands read both.

Serve what was pushed with: skillport serve oci://REGISTRY/REPOSITORY:TAG`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("push: give a skill folder and a destination, e.g. skillport push ./skills oci://ghcr.io/acme/skills:v1")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "skillport" && format != "toolhive" {
				return usageErrorf("push: --format %s: give skillport (one layer per file) or toolhive (ToolHive's tar+gzip layout)", esc(format))
			}
			if keyless, _ := cmd.Flags().GetBool("keyless"); format == "toolhive" && (signKey != "" || keyless) {
				return usageErrorf("push: --sign-key and --keyless apply to --format skillport; ToolHive artifacts carry no skillport signature")
			}
			o := &ocisource.Options{PlainHTTP: plainHTTP, ToolHive: format == "toolhive"}
			s, err := chooseSigner(cmd, "push", "sign-key", false)
			if err != nil {
				return err
			}
			if s != nil {
				o.Sign = func(sk *catalog.Skill) ([]byte, error) {
					if len(sk.Files) == 0 {
						return nil, nil // a dynamic skill has no resource set to sign
					}
					return s.Sign(registry.SignedSet(sk))
				}
			}
			return runPush(cmd.Context(), cmd.OutOrStdout(), args[0], args[1], o)
		},
	}
	cmd.Flags().BoolVar(&plainHTTP, "plain-http", false, "talk HTTP, not HTTPS, to a registry that is not on loopback")
	cmd.Flags().StringVar(&format, "format", "skillport", "artifact layout: skillport (one layer per file, docs/oci.md) or toolhive")
	cmd.Flags().StringVar(&signKey, "sign-key", "", "sign each skill with the PEM private key `FILE` and attach the bundles as referrers (as skillport sign --key)")
	keylessFlags(cmd.Flags())
	rootCmd.AddCommand(cmd)
	serveCmd.Flags().Bool("plain-http", false, "talk HTTP, not HTTPS, to oci:// registries that are not on loopback")
}

// runPush pushes the catalog of the folder src to dest.
func runPush(ctx context.Context, out io.Writer, src, dest string, o *ocisource.Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ref, err := ocisource.ParseRef(dest)
	if err != nil {
		return usageErrorf("push: %v", err)
	}
	if ref.Pinned() {
		return usageErrorf("push: %s: push to a tag (oci://REGISTRY/REPOSITORY:TAG), not a digest", esc(dest))
	}
	if fi, err := os.Stat(src); err == nil && !fi.IsDir() && filepath.Base(src) == catalog.FileNameSKILL {
		src = filepath.Dir(src)
	}
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return usageErrorf("push: %s: %v", esc(src), err)
	}
	cat, err := catalog.OpenDir(src, nil)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("push: %w", err)}
	}
	defer cat.Close()
	// A skill the catalog refuses would silently be missing from the
	// registry: push nothing until the folder validates.
	if n := cat.Stats().Invalid; n > 0 {
		return &exitError{code: 1, err: fmt.Errorf("push: %s: %s invalid; run skillport validate %s and fix them, nothing was pushed", esc(src), count(n, "skill is", "skills are"), esc(src))}
	}
	push := ocisource.Push
	if o != nil && o.ToolHive {
		push = ocisource.PushToolHive
	}
	res, err := push(ctx, cat, ref, o)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("push: %w", err)}
	}
	fmt.Fprintf(out, "pushed %s to %s (%s): %s uploaded, %d already in the registry",
		count(res.Skills, "skill", "skills"), esc(ref.String()), res.Digest, count(res.Uploaded, "blob", "blobs"), res.Present)
	if sig := res.Signatures; sig.Uploaded+sig.Present > 0 {
		fmt.Fprintf(out, "; %s attached, %d already attached", count(sig.Uploaded, "signature", "signatures"), sig.Present)
	}
	fmt.Fprintln(out)
	return nil
}

// openOCI opens an oci:// SOURCE of serve; follow re-resolves a tag every
// --poll.
func openOCI(ctx context.Context, src string, copts *catalog.Options, o sourceOptions) (servedSource, error) {
	ref, err := ocisource.ParseRef(src)
	if err != nil {
		return servedSource{}, usageErrorf("serve: %v", err)
	}
	s, err := ocisource.Open(ctx, ref, &ocisource.Options{PlainHTTP: o.plainHTTP, Logger: o.log, CacheDir: ociCacheDir(o.cacheDir)}, copts)
	if err != nil {
		return servedSource{}, &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
	}
	o.log.Info("oci source", "source", ref.String(), "digest", s.Digest(), "pinned", ref.Pinned())
	return servedSource{name: ref.String(), src: published.NewCatalogSource(s.Catalog()), oci: s}, nil
}

// ociCacheDir is where fetched OCI blobs are kept: DIR/oci with
// --cache-dir DIR, else ocisource.DefaultCacheDir; "" (no cache) when
// there is no user cache directory.
func ociCacheDir(flagDir string) string {
	if flagDir != "" {
		return filepath.Join(flagDir, "oci")
	}
	d, _ := ocisource.DefaultCacheDir()
	return d
}

// signOCI signs every skill of an oci:// reference as it is served and
// attaches the bundles as referrers of the skills' artifacts.
func signOCI(stdout io.Writer, s skillSigner, src string) error {
	ref, err := ocisource.ParseRef(src)
	if err != nil {
		return usageErrorf("sign: %v", err)
	}
	ctx := context.Background()
	o, err := ocisource.Open(ctx, ref, &ocisource.Options{CacheDir: ociCacheDir("")}, nil)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("sign: %w", err)}
	}
	attached, present, err := o.Attach(ctx, func(sk *catalog.Skill) ([]byte, error) {
		if len(sk.Files) == 0 {
			return nil, nil
		}
		return s.Sign(registry.SignedSet(sk))
	})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("sign: %w", err)}
	}
	fmt.Fprintf(stdout, "signed %s of %s (%s) %s: %s attached, %d already attached\n",
		count(attached+present, "skill", "skills"), esc(ref.String()), o.Digest(), esc(signedBy(s)), count(attached, "signature", "signatures"), present)
	return nil
}
