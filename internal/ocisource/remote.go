package ocisource

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/skillport/skillport/catalog"
)

// Environment variables holding registry credentials, taken before the
// Docker configuration file; a flag never carries a secret.
const (
	EnvUsername = "SKILLPORT_OCI_USERNAME"
	EnvPassword = "SKILLPORT_OCI_PASSWORD"
)

// Options configure how a registry is reached.
type Options struct {
	// PlainHTTP talks HTTP instead of HTTPS to a registry that is not on a
	// loopback address (loopback registries are always plain HTTP).
	PlainHTTP bool
	// MaxTotal bounds the bytes of files fetched for one reference;
	// 0 means DefaultMaxTotal.
	MaxTotal int64
	// MaxMetadata bounds the bytes the manifests and configs of one
	// reference declare; 0 means DefaultMaxMetadata.
	MaxMetadata int64
	// Logger receives the failures of Watch; nil discards them.
	Logger *slog.Logger
	// Sign, for Push, returns a skill's Sigstore bundle to attach as a
	// referrer of its artifact; nil attaches the bundle the catalog read
	// from the folder (catalog.Skill.Signature), if any.
	Sign func(*catalog.Skill) ([]byte, error)
	// CacheDir keeps the manifests and blobs Open and Update fetched, by
	// digest, so that a restart fetches only what changed; "" keeps
	// nothing (DefaultCacheDir is the command line's).
	CacheDir string
	// ToolHive, for the push command, selects PushToolHive's layout.
	ToolHive bool
}

// repository returns the remote repository of ref, with credentials from
// the environment or else the Docker configuration file and its helpers.
func repository(ref Ref, o *Options) (*remote.Repository, error) {
	if o == nil {
		o = &Options{}
	}
	repo, err := remote.NewRepository(ref.Registry + "/" + ref.Repository)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", ref, err)
	}
	repo.PlainHTTP = o.PlainHTTP || loopback(ref.Registry)
	// Connections are kept for every fetch in flight: the default keeps
	// two per host, and the others would each open a new one per request.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = fetchers
	client := &auth.Client{Client: &http.Client{Transport: retry.NewTransport(tr)}, Cache: auth.NewCache()}
	client.SetUserAgent("skillport")
	if u, p := os.Getenv(EnvUsername), os.Getenv(EnvPassword); u != "" || p != "" {
		client.Credential = auth.StaticCredential(ref.Registry, auth.Credential{Username: u, Password: p})
	} else {
		store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s: reading the Docker configuration for credentials: %v; fix the file or set %s and %s", ref, err, EnvUsername, EnvPassword)
		}
		client.Credential = credentials.Credential(store)
	}
	repo.Client = client
	return repo, nil
}

// authHint returns err with what to do when the registry wants
// credentials that were not given or were refused.
func authHint(ref Ref, err error) error {
	var resp *errcode.ErrorResponse
	if errors.Is(err, auth.ErrBasicCredentialNotFound) ||
		errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		return fmt.Errorf("%w; log in with docker login %s, or set %s and %s", err, ref.Registry, EnvUsername, EnvPassword)
	}
	return err
}
