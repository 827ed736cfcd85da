package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Grants a stored token was obtained with.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// Token is what the store keeps for one server: the tokens, and what is
// needed to refresh them without the user (the token endpoint and the
// client identity the authorization server knows).
type Token struct {
	// Resource is the server's URL as the user named it: the store's key.
	Resource string `json:"resource"`
	// ProtectedResource is the resource the server's metadata names, the
	// RFC 8707 resource parameter of every token request.
	ProtectedResource string `json:"protected_resource,omitempty"`
	Issuer            string `json:"issuer,omitempty"`
	TokenURL          string `json:"token_url"`
	ClientID          string `json:"client_id"`
	// ClientSecret is a secret the authorization server issued through
	// dynamic registration. A secret the user gave (client credentials)
	// is never stored: it is read from its environment variable or file
	// each time.
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	Grant        string           `json:"grant"`
	Scopes       []string         `json:"scopes,omitempty"`
	AccessToken  string           `json:"access_token"`
	TokenType    string           `json:"token_type,omitempty"`
	RefreshToken string           `json:"refresh_token,omitempty"`
	Expiry       time.Time        `json:"expiry,omitzero"`
	Saved        time.Time        `json:"saved,omitzero"`
}

func (t *Token) oauth2() *oauth2.Token {
	return &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry}
}

func (t *Token) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     t.ClientID,
		ClientSecret: t.ClientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: t.TokenURL, AuthStyle: t.AuthStyle},
		Scopes:       t.Scopes,
	}
}

// storeFile is the file's layout; Version changes when it cannot be read
// by an older skillport.
type storeFile struct {
	Version int               `json:"version"`
	Servers map[string]*Token `json:"servers"`
}

// MaxStoreBytes bounds the tokens file: a few hundred servers' tokens.
const MaxStoreBytes = 4 << 20

// ErrInsecureStore is returned for a tokens file that others may read.
var ErrInsecureStore = errors.New("tokens file is readable by other users")

// Store keeps tokens in one JSON file, mode 0600, keyed by server URL.
// Every write replaces the file atomically (temporary file, then rename),
// so a rotated refresh token is never half-written; each write re-reads
// the file first, so two commands signing in to different servers do not
// lose each other's tokens.
type Store struct {
	path string
	mu   sync.Mutex
}

// DefaultStorePath is tokens.json in skillport's directory of the user's
// configuration directory (os.UserConfigDir).
func DefaultStorePath() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory for the tokens file: %w", err)
	}
	return filepath.Join(d, "skillport", "tokens.json"), nil
}

// NewStore returns the store at path, created on the first write. The
// file is read on every use, so each command sees the tokens another
// saved; a file that is group- or world-accessible is refused then, with
// the chmod that fixes it.
func NewStore(path string) *Store { return &Store{path: path} }

// Path is the store's file.
func (s *Store) Path() string { return s.path }

func (s *Store) read() (*storeFile, error) {
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &storeFile{Version: 1, Servers: map[string]*Token{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("tokens file %s is not a regular file", s.path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o; run: chmod 600 %s", ErrInsecureStore, s.path, fi.Mode().Perm(), s.path)
	}
	if fi.Size() > MaxStoreBytes {
		return nil, fmt.Errorf("tokens file %s is %d bytes, more than the %d a tokens file may have; remove it and sign in again", s.path, fi.Size(), MaxStoreBytes)
	}
	var sf storeFile
	if err := json.NewDecoder(f).Decode(&sf); err != nil {
		return nil, fmt.Errorf("tokens file %s: %v; remove it and sign in again", s.path, err)
	}
	if sf.Version != 1 {
		return nil, fmt.Errorf("tokens file %s has version %d, which this skillport does not read", s.path, sf.Version)
	}
	if sf.Servers == nil {
		sf.Servers = map[string]*Token{}
	}
	return &sf, nil
}

func (s *Store) write(sf *storeFile) error {
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	data, err := json.MarshalIndent(sf, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tokens-*.json")
	if err != nil {
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("tokens file %s: %w", s.path, err)
	}
	return nil
}

// Get returns the token stored for the server at resource, or nil.
func (s *Store) Get(resource string) (*Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sf, err := s.read()
	if err != nil {
		return nil, err
	}
	return sf.Servers[resource], nil
}

// Put stores t under t.Resource, replacing what was there.
func (s *Store) Put(t *Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sf, err := s.read()
	if err != nil {
		return err
	}
	c := *t
	c.Saved = time.Now().UTC().Truncate(time.Second)
	sf.Servers[t.Resource] = &c
	return s.write(sf)
}

// Delete forgets the server at resource; it reports whether there was a
// token to forget.
func (s *Store) Delete(resource string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sf, err := s.read()
	if err != nil {
		return false, err
	}
	if _, ok := sf.Servers[resource]; !ok {
		return false, nil
	}
	delete(sf.Servers, resource)
	return true, s.write(sf)
}

// List returns every stored token, by server URL.
func (s *Store) List() ([]*Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sf, err := s.read()
	if err != nil {
		return nil, err
	}
	out := make([]*Token, 0, len(sf.Servers))
	for _, t := range sf.Servers {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out, nil
}
