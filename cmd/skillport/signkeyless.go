package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skillport/skillport/internal/signature"
)

// skillSigner is a key (--key, --sign-key) or a keyless signer (--keyless).
type skillSigner interface {
	Sign(*signature.Set) ([]byte, error)
	Identity() signature.Identity
}

// signedBy says how a command signed, for its summary line.
func signedBy(s skillSigner) string {
	id := s.Identity()
	if id.KeyID != "" {
		return "with key " + short16(id.KeyID)
	}
	return "keyless as " + id.String()
}

func short16(s string) string {
	if len(s) > 16 {
		return s[:16]
	}
	return s
}

// keylessFlagNames are the flags only keyless signing uses.
var keylessFlagNames = []string{"oidc-token-file", "fulcio-url", "rekor-url", "sigstore-timeout"}

// keylessFlags adds the keyless signing flags of sign, publish and push.
func keylessFlags(f *pflag.FlagSet) {
	f.Bool("keyless", false, "sign keylessly: an ephemeral key, a Fulcio certificate for the OIDC identity of an ID token, a Rekor log entry (docs/signing.md)")
	f.String("oidc-token-file", "", "read the OIDC ID token for keyless signing from `FILE` (default $"+signature.EnvIDToken+", else GitHub Actions' token)")
	f.String("fulcio-url", signature.DefaultFulcioURL, "Fulcio certificate authority `URL` for keyless signing")
	f.String("rekor-url", signature.DefaultRekorURL, "Rekor transparency log `URL` for keyless signing")
	f.Duration("sigstore-timeout", signature.DefaultKeylessTimeout, "bound each request to Fulcio, Rekor and the ID token endpoint to `D`")
}

// chooseSigner returns the signer cmd's flags ask for: a key with
// keyFlag, keyless with --keyless, nil for neither. With auto (sign,
// whose only other choice is a key), keyless is chosen, and said so, when
// no key is given and an ID token is: a token file, $SIGSTORE_ID_TOKEN or
// GitHub Actions' token endpoint. Keyless signing always says on stderr
// which identity signs.
func chooseSigner(cmd *cobra.Command, name, keyFlag string, auto bool) (skillSigner, error) {
	f := cmd.Flags()
	keyFile, _ := f.GetString(keyFlag)
	keyless, _ := f.GetBool("keyless")
	tokenFile, _ := f.GetString("oidc-token-file")
	var changed []string
	for _, n := range keylessFlagNames {
		if f.Changed(n) {
			changed = append(changed, "--"+n)
		}
	}
	switch {
	case keyFile != "" && (keyless || len(changed) > 0):
		return nil, usageErrorf("%s: --%s signs with a key; --keyless and %s are for keyless signing: give one or the other", name, keyFlag, strings.Join(keylessFlagNames, ", --"))
	case keyFile != "":
		s, err := loadSigner(name, "--"+keyFlag, keyFile)
		if err != nil {
			return nil, err // not a nil *Signer in a non-nil interface
		}
		return s, nil
	case !keyless && !auto && len(changed) > 0:
		return nil, usageErrorf("%s: %s applies to keyless signing; add --keyless", name, strings.Join(changed, ", "))
	case !keyless && !auto:
		return nil, nil
	case !keyless && tokenFile == "" && !signature.IDTokenOffered(os.Getenv):
		if len(changed) > 0 {
			return nil, usageErrorf("%s: %s applies to keyless signing, which needs an ID token: --oidc-token-file FILE, $%s, or GitHub Actions with \"permissions: id-token: write\"", name, strings.Join(changed, ", "), signature.EnvIDToken)
		}
		return nil, nil
	}
	timeout, _ := f.GetDuration("sigstore-timeout")
	if timeout <= 0 {
		return nil, usageErrorf("%s: --sigstore-timeout must be positive", name)
	}
	ctx := cmdContext(cmd)
	var token, from string
	if tokenFile != "" {
		b, err := readBounded(tokenFile, signature.MaxIDTokenBytes)
		if err != nil {
			return nil, usageErrorf("%s: --oidc-token-file: %v", name, err)
		}
		token, from = strings.TrimSpace(string(b)), "--oidc-token-file "+esc(tokenFile)
	} else {
		var err error
		if token, from, err = signature.EnvIDTokenSource(ctx, os.Getenv, timeout); err != nil {
			return nil, &exitError{code: 1, err: fmt.Errorf("%s: keyless: %w", name, err)}
		}
	}
	if token == "" {
		return nil, usageErrorf("%s: --keyless needs an OIDC ID token: --oidc-token-file FILE, $%s, or GitHub Actions with \"permissions: id-token: write\" (there is no browser sign-in)", name, signature.EnvIDToken)
	}
	fulcio, _ := f.GetString("fulcio-url")
	rekor, _ := f.GetString("rekor-url")
	s, err := signature.NewKeylessSigner(ctx, signature.KeylessOptions{IDToken: token, FulcioURL: fulcio, RekorURL: rekor, Timeout: timeout})
	if err != nil {
		return nil, &exitError{code: 1, err: fmt.Errorf("%s: %w (ID token from %s)", name, err, from)}
	}
	how := "--keyless"
	if !keyless {
		how = "no --" + keyFlag + " given and an ID token found"
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "skillport: %s: signing keyless (%s) as %s, ID token from %s; certificate from %s, each signature logged publicly in %s\n",
		name, how, esc(s.Identity().String()), from, esc(fulcio), esc(rekor))
	return s, nil
}
